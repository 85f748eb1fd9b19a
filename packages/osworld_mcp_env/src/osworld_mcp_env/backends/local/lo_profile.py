"""A warmed LibreOffice profile, built once per host and LibreOffice version.

A LibreOffice start from a profile that only holds ``registrymodifications.xcu``
costs ~1.3 s (it builds the rest of the profile first); from a profile that a
previous clean start left behind it costs ~0.45 s. Every reset starts
LibreOffice, so the template is built once, in a throwaway desktop, read out as a
tar archive through the guest and made part of the home template
(:func:`osworld_mcp_env.backends.local.home.ensure_home_template`).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import io
import os
import shutil
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.backends.local.home import registry_xcu
from osworld_mcp_env.errors import DesktopStartError

PROFILE_RELATIVE = Path(".config/libreoffice")
VERSION_FILE = Path("/usr/lib/libreoffice/program/versionrc")
# UNO script run inside the throwaway desktop: a clean quit writes a complete profile.
TERMINATE_SCRIPT = """
import time, uno
resolver = uno.getComponentContext().ServiceManager.createInstanceWithContext(
    "com.sun.star.bridge.UnoUrlResolver", uno.getComponentContext())
for _ in range(200):
    try:
        ctx = resolver.resolve("uno:socket,host=127.0.0.1,port=2002;urp;StarOffice.ComponentContext")
        break
    except Exception:
        time.sleep(0.05)
desktop = ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
try:
    desktop.terminate()
except Exception:
    pass  # the bridge dies with the office: that is the success case
"""


class _GuestPython(Protocol):
    @property
    def guest_python(self) -> str: ...


class ProfileDesktop(Desktop, Protocol):
    """A desktop that names its guest interpreter (``LocalDesktop``): the quit script needs its ``uno``."""

    @property
    def config(self) -> _GuestPython:
        """The desktop's settings; ``guest_python`` is the interpreter with LibreOffice's ``uno``."""
        ...


def template_dir(root: Path) -> Path:
    """Where the template for the installed LibreOffice lives."""
    # A new LibreOffice or new settings in backends.home make a new template.
    stamp = (VERSION_FILE.read_bytes() if VERSION_FILE.exists() else b"unknown") + registry_xcu().encode()
    return root / "templates" / f"libreoffice-{hashlib.sha1(stamp).hexdigest()[:12]}"


def ensure_template(root: Path, make_desktop: Callable[[], ProfileDesktop]) -> Path | None:
    """Returns the profile template, building it first if this host has none.

    Args:
        root: The backend's root directory.
        make_desktop: Starts a throwaway ``LocalDesktop`` without a template.

    Returns:
        The template directory, or None when LibreOffice is not installed.
    """
    if shutil.which("soffice") is None:
        return None
    target = template_dir(root)
    if (target / "4" / "user").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another env process may be building it right now
        if (target / "4" / "user").is_dir():
            return target
        desktop = make_desktop()
        try:
            _warm_profile(desktop)
            staging = target.with_name(target.name + f".tmp{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            _extract_profile(_export_profile(desktop), staging)
            for stale in staging.rglob(".lock"):
                stale.unlink()
            os.replace(staging, target)
        finally:
            desktop.close()
    return target


def _warm_profile(desktop: ProfileDesktop) -> None:
    desktop.launch(["soffice", "--calc"])
    deadline = time.monotonic() + 60
    while not any("LibreOffice Calc" in w.title for w in desktop.windows()):
        if time.monotonic() > deadline:
            raise DesktopStartError("LibreOffice Calc did not open while building the profile template.")
        time.sleep(0.05)
    desktop.execute([desktop.config.guest_python, "-c", TERMINATE_SCRIPT], timeout=30)
    while desktop.execute(["pgrep", "-x", "soffice.bin"]).returncode == 0:
        if time.monotonic() > deadline:
            raise DesktopStartError("LibreOffice did not quit while building the profile template.")
        time.sleep(0.05)


def _export_profile(desktop: Desktop) -> bytes:
    """The warmed profile as a tar archive, read out through the guest (the home is a tmpfs inside)."""
    done = desktop.execute(
        f"tar -C ~/{PROFILE_RELATIVE.parent} -cf - {PROFILE_RELATIVE.name} | base64 -w0",
        shell=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise DesktopStartError(f"Could not export the LibreOffice profile: {done.error[-300:]}")
    return base64.b64decode(done.output)


def _extract_profile(archive: bytes, target: Path) -> None:
    """Unpacks the profile's directories and regular files only, never outside ``target``."""
    target.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if not parts or parts[0] != PROFILE_RELATIVE.name or ".." in parts or member.name.startswith("/"):
                continue
            path = target.joinpath(*parts[1:])
            if member.isdir():
                path.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is not None:
                    path.write_bytes(source.read())
