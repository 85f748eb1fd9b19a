"""Setup steps with the names and semantics of OSWorld's setup controller.

Every step is ``fn(desktop, context, **parameters) -> None`` registered with
``@register_setup_step("<type>")``; :func:`run_steps` dispatches by name, so a new
step type is one decorated function. Differences from OSWorld, on purpose:

* ``download`` reads the file from the local :class:`~osworld_mcp_env.tasks.cache.FileCache`,
  never from the internet.
* ``sleep`` is capped by ``TaskRunConfig.max_sleep_s``.
* A failing step raises :class:`~osworld_mcp_env.errors.SetupStepError` (a task
  problem); a :class:`~osworld_mcp_env.errors.DesktopError` propagates unchanged with
  a note naming the step, since the desktop, not the task, failed.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import shlex
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from osworld_mcp_env import devtools
from osworld_mcp_env.backends.base import Desktop, ExecResult
from osworld_mcp_env.errors import DesktopError, GuestRequestError, GuestTimeout, SetupStepError
from osworld_mcp_env.registry import Registry
from osworld_mcp_env.tasks.cache import url_basename
from osworld_mcp_env.tasks.context import TaskContext
from osworld_mcp_env.tasks.model import SetupStep
from osworld_mcp_env.urls import compare_urls

logger = logging.getLogger(__name__)


class SetupStepFn(Protocol):
    """The shared signature of every setup step."""

    def __call__(self, desktop: Desktop, context: TaskContext, /, **parameters: Any) -> None:
        """Runs the step; raises ``SetupStepError`` when the task's step cannot be done."""
        ...


SETUP_STEPS: Registry[SetupStepFn] = Registry("setup step")


_StepT = TypeVar("_StepT", bound=Callable[..., None])


def register_setup_step(name: str) -> Callable[[_StepT], _StepT]:
    """Registers a setup step type: ``@register_setup_step("launch")``.

    A step names its own parameters (``def launch(desktop, context, command, shell=False)``),
    which the ``**parameters`` protocol cannot express; the decorator keeps the function's type.
    """
    return cast(Callable[[_StepT], _StepT], SETUP_STEPS.register(name))


def run_steps(steps: Sequence[SetupStep], desktop: Desktop, context: TaskContext, *, phase: str) -> None:
    """Runs steps in order; stops at the first failure.

    Args:
        steps: The task's ``config`` or its evaluator's ``postconfig``.
        desktop: The desktop to act on.
        context: The run context.
        phase: ``"setup"`` or ``"postconfig"``, for messages.

    Raises:
        SetupStepError: A step failed or its parameters are wrong; the message names the step.
        DesktopError: The desktop failed (with a note naming the step).
        RegistryError: A step type is unknown (a validated task never has one).
    """
    for i, step in enumerate(steps):
        fn = SETUP_STEPS.get(step.type)
        where = f"{phase} step {i} ({step.type}) of task {context.task_id!r}"
        try:
            fn(desktop, context, **dict(step.parameters))
        except SetupStepError as exc:
            raise SetupStepError(f"{where} failed: {exc}") from exc
        except TypeError as exc:
            # Wrong or missing parameters in the task JSON reach the step as a TypeError.
            raise SetupStepError(f"{where}: bad parameters {dict(step.parameters)!r}: {exc}") from exc
        except DesktopError as exc:
            exc.add_note(f"while running {where}")
            raise


def _boolish(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _command(command: Any, shell: bool) -> list[str] | str:
    if isinstance(command, str):
        return command if shell else shlex.split(command)
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        return " ".join(shlex.quote(c) for c in command) if shell else list(command)
    raise SetupStepError(f"'command' must be a string or a list of strings, got {command!r}.")


def fill_placeholders(
    command: list[str] | str, screen_size: tuple[int, int], password: str
) -> list[str] | str:
    """Replaces OSWorld's ``{CLIENT_PASSWORD}``, ``{SCREEN_WIDTH}`` (…``_HALF``) placeholders."""
    width, height = screen_size
    values = {
        "{CLIENT_PASSWORD}": password,
        "{SCREEN_WIDTH_HALF}": str(width // 2),
        "{SCREEN_HEIGHT_HALF}": str(height // 2),
        "{SCREEN_WIDTH}": str(width),
        "{SCREEN_HEIGHT}": str(height),
    }

    def fill(s: str) -> str:
        for key, value in values.items():
            s = s.replace(key, value)
        return s

    return fill(command) if isinstance(command, str) else [fill(c) for c in command]


@register_setup_step("launch")
def launch(desktop: Desktop, context: TaskContext, /, command: Any, shell: Any = False) -> None:
    """Starts a command without waiting for it (``/setup/launch``); a missing program is no error."""
    sh = _boolish(shell)
    with _logged_if_refused(context, f"launch of {command!r}"):
        desktop.launch(_command(command, sh), shell=sh)


@register_setup_step("open")
def open_file(desktop: Desktop, context: TaskContext, /, path: str) -> None:
    """Opens a file with its default app and waits for the window (``/setup/open_file``)."""
    desktop.open_file(path, timeout=context.config.open_timeout_s)


def _until_met(result: ExecResult, until: Mapping[str, Any] | None) -> bool:
    if not until:
        return True
    return (
        ("returncode" in until and result.returncode == until["returncode"])
        or ("stdout" in until and str(until["stdout"]) in result.output)
        or ("stderr" in until and str(until["stderr"]) in result.error)
    )


@register_setup_step("execute")
def execute(
    desktop: Desktop,
    context: TaskContext,
    /,
    command: Any,
    shell: Any = False,
    stdout: str = "",
    stderr: str = "",
    until: Mapping[str, Any] | None = None,
) -> None:
    """Runs a command to completion (``/setup/execute``), repeating it until ``until`` holds.

    A non-zero exit is not an error, as in OSWorld; ``stdout``/``stderr`` name files in
    the run's ``work_dir`` that receive the output (read later by the ``cache_file`` getter).
    When ``until`` is still unmet after ``until_attempts`` runs, a warning is logged and setup
    goes on (OSWorld's behaviour).
    """
    sh = _boolish(shell)
    cmd = fill_placeholders(_command(command, sh), desktop.screen_size, context.config.client_password)
    attempts = context.config.until_attempts if until else 1
    for attempt in range(attempts):
        result = desktop.execute(cmd, shell=sh)
        for name, text in ((stdout, result.output), (stderr, result.error)):
            if name:
                target = context.work_dir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        if _until_met(result, until):
            return
        if attempt + 1 < attempts:
            context.sleep(context.config.until_interval_s)
    logger.warning("task %s: `until` %r not met after %d runs of %r", context.task_id, until, attempts, cmd)


register_setup_step("command")(execute)


@register_setup_step("sleep")
def sleep(desktop: Desktop, context: TaskContext, /, seconds: float) -> None:
    """Waits ``seconds``, capped at ``TaskRunConfig.max_sleep_s``."""
    if not isinstance(seconds, int | float) or seconds < 0:
        raise SetupStepError(f"'seconds' must be a number >= 0, got {seconds!r}.")
    context.sleep(min(float(seconds), context.config.max_sleep_s))


@contextlib.contextmanager
def _logged_if_refused(context: TaskContext, what: str) -> Iterator[None]:
    """OSWorld's setup controller logs a request its server refuses and goes on; so do we.

    Refused means the guest answered with an error (no such window, no such program).
    A guest that does not answer still raises: the desktop, not the task, is broken.
    """
    try:
        yield
    except GuestRequestError as exc:
        if exc.status is None or isinstance(exc, GuestTimeout):
            raise
        logger.warning("task %s: %s refused (%s); setup goes on", context.task_id, what, exc)


def _on_window(
    act: Callable[..., None], context: TaskContext, window_name: str, strict: Any, by_class: Any
) -> None:
    with _logged_if_refused(context, f"window {window_name!r}"):
        act(window_name, strict=_boolish(strict), by_class=_boolish(by_class))


@register_setup_step("activate_window")
def activate_window(
    desktop: Desktop, context: TaskContext, /, window_name: str, strict: Any = False, by_class: Any = False
) -> None:
    """Raises and focuses a window by title or class (``/setup/activate_window``); none is no error."""
    _on_window(desktop.activate_window, context, window_name, strict, by_class)


@register_setup_step("close_window")
def close_window(
    desktop: Desktop, context: TaskContext, /, window_name: str, strict: Any = False, by_class: Any = False
) -> None:
    """Closes a window by title or class (``/setup/close_window``); none is no error."""
    _on_window(desktop.close_window, context, window_name, strict, by_class)


def _files(files: Any, keys: tuple[str, str]) -> list[Mapping[str, str]]:
    if not isinstance(files, list) or not all(
        isinstance(f, Mapping) and all(isinstance(f.get(k), str) for k in keys) for f in files
    ):
        raise SetupStepError(f"'files' must be a list of objects with string {keys}, got {files!r}.")
    return files


@register_setup_step("download")
def download(desktop: Desktop, context: TaskContext, /, files: Any) -> None:
    """Copies each ``{url, path}`` from the local file cache into the desktop at ``path``."""
    for f in _files(files, ("url", "path")):
        dest_name = Path(f["path"]).name
        local = context.cache.resolve(f["url"], context.task_id, dest_name)
        desktop.upload_file(f["path"], local.read_bytes())


@register_setup_step("upload_file")
def upload_file(desktop: Desktop, context: TaskContext, /, files: Any) -> None:
    """Uploads host files ``{local_path, path}`` into the desktop.

    A relative ``local_path`` is looked up beside the task file, then in each cache root.
    """
    for f in _files(files, ("local_path", "path")):
        local = Path(f["local_path"])
        tried = [local] if local.is_absolute() else []
        if not local.is_absolute():
            if context.task_dir is not None:
                tried.append(context.task_dir / local)
            tried += [root / context.task_id / local for root in context.config.cache_roots]
            tried += [root / local for root in context.config.cache_roots]
        found = next((p for p in tried if p.is_file()), None)
        if found is None:
            listing = "\n".join(f"  - {p}" for p in tried) or "  (no cache roots and no task dir)"
            raise SetupStepError(
                f"upload_file: {f['local_path']!r} (task {context.task_id!r}) not found; tried:\n{listing}"
            )
        desktop.upload_file(f["path"], found.read_bytes())


# Chromium -----------------------------------------------------------------------
# OSWorld drives Chromium over DevTools with Playwright; here the same requests run
# inside the desktop (osworld_mcp_env.devtools). Chromium's endpoint is waited for
# (state, not time): OSWorld retries its connection for up to about a minute.
CHROME_WAIT_S = 60.0
CHROME_PAGE_LOAD_S = 60.0
HISTORY_EMPTY_URL = (
    "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
    "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true"
)
"""The empty Chromium ``History`` database OSWorld's ``update_browse_history`` fills (from the file cache)."""
HISTORY_UPLOAD = "/tmp/.osworld-chromium-history.sqlite"


def _urls(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(u, str) for u in value):
        raise SetupStepError(f"{name!r} must be a list of url strings, got {value!r}.")
    return value


@register_setup_step("chrome_open_tabs")
def chrome_open_tabs(desktop: Desktop, context: TaskContext, /, urls_to_open: Any) -> None:
    """Opens each url in a new tab, waiting for its load (a slow page is logged, not fatal).

    As in OSWorld, the browser's first tab is closed once the first url is open, and
    the last url opened is the active tab.
    """
    urls = _urls(urls_to_open, "urls_to_open")
    try:
        opened = devtools.open_tabs(desktop, urls, wait_s=CHROME_WAIT_S, load_s=CHROME_PAGE_LOAD_S)
    except devtools.DevToolsError as exc:
        raise SetupStepError(f"chrome_open_tabs: {exc}") from exc
    for tab in opened:
        if tab["ready"] != "complete":
            logger.warning("task %s: %s did not finish loading", context.task_id, tab["url"])


@register_setup_step("chrome_close_tabs")
def chrome_close_tabs(desktop: Desktop, context: TaskContext, /, urls_to_close: Any) -> None:
    """For each url, closes the first open tab whose url equals it (OSWorld's ``compare_urls``)."""
    urls = _urls(urls_to_close, "urls_to_close")
    open_tabs = devtools.tabs(desktop, wait_s=CHROME_WAIT_S)
    if open_tabs is None:
        raise SetupStepError(f"chrome_close_tabs: no DevTools endpoint after {CHROME_WAIT_S:g} s")
    closing: list[str] = []
    for url in urls:
        match = next((t for t in open_tabs if t.id not in closing and compare_urls(t.url, url)), None)
        if match is not None:
            closing.append(match.id)
    devtools.close_tabs(desktop, closing)


@register_setup_step("update_browse_history")
def update_browse_history(desktop: Desktop, context: TaskContext, /, history: Any) -> None:
    """Writes the profile's ``History``: OSWorld's empty database plus one visit per item.

    Each item is ``{url, title, visit_time_from_now_in_seconds}``. The empty database
    comes from the file cache (:data:`HISTORY_EMPTY_URL`), as OSWorld downloads it.
    """
    if not isinstance(history, list) or not all(
        isinstance(h, Mapping) and {"url", "title", "visit_time_from_now_in_seconds"} <= h.keys()
        for h in history
    ):
        raise SetupStepError(
            f"'history' must be a list of {{url, title, visit_time_from_now_in_seconds}}: {history!r}"
        )
    empty = context.cache.resolve(HISTORY_EMPTY_URL, context.task_id, "history_empty.sqlite")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "History"
        shutil.copyfile(empty, db)
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            for item in history:
                visited = datetime.datetime.now() - datetime.timedelta(
                    seconds=item["visit_time_from_now_in_seconds"]
                )
                # Chromium's time: microseconds since 1601-01-01.
                stamp = int((visited - datetime.datetime(1601, 1, 1)).total_seconds() * 1_000_000)
                cursor = conn.execute(
                    "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden)"
                    " VALUES (?, ?, 1, 0, ?, 0)",
                    (item["url"], item["title"], stamp),
                )
                conn.execute(
                    "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration)"
                    " VALUES (?, ?, 0, 805306368, 0, 0)",
                    (cursor.lastrowid, stamp),
                )
        data = db.read_bytes()
    # Uploaded beside, then moved by the user's shell, which knows where $HOME is.
    desktop.upload_file(HISTORY_UPLOAD, data)
    profile = '"$HOME/.config/chromium/Default"'
    done = desktop.execute(["sh", "-c", f"mkdir -p {profile} && mv -f {HISTORY_UPLOAD} {profile}/History"])
    if done.returncode != 0:
        raise SetupStepError(
            f"update_browse_history: cannot put History in the profile: {done.error.strip()}"
        )


__all__ = [
    "SETUP_STEPS",
    "SetupStepFn",
    "fill_placeholders",
    "register_setup_step",
    "run_steps",
    "url_basename",
]
