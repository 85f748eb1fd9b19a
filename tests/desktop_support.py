"""Whether the embedded desktop can run here, for every test package's skips (tests/ is on sys.path)."""

from __future__ import annotations

import os
import shutil

DESKTOP_BINARIES = ("bwrap", "Xvfb", "openbox", "dbus-daemon", "soffice")
# Read once, here in the test layer: "1" turns a desktop that cannot run into a failure.
REQUIRE_DESKTOP = os.environ.get("OSWORLD_REQUIRE_DESKTOP") == "1"


def desktop_missing() -> str | None:
    """Why the embedded desktop cannot run here, or None."""
    missing = [b for b in DESKTOP_BINARIES if shutil.which(b) is None]
    if missing:
        return f"missing {', '.join(missing)} (run tools/setup_debian.sh)"
    if os.geteuid() != 0:
        return "the sandbox maps two host uids, which needs root"
    if os.path.exists("/proc/sys/user/max_user_namespaces"):
        with open("/proc/sys/user/max_user_namespaces") as f:
            if f.read().strip() == "0":
                return "user namespaces are disabled"
    return None
