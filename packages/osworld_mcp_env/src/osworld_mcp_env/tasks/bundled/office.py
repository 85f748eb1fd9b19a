"""Setup steps that wait on LibreOffice's state, so scripted input never races the office.

LibreOffice maps its window (and the ``open`` step returns) before the document is
loaded; keys sent then are lost, and a GUI oracle scored 0 on a loaded machine. And
``ctrl+s`` as the last action may still be queued in the office when the evaluator
reads the file. Both waits ask the office itself, through UNO from inside the desktop
(Debian's ``python3`` has ``uno``; the office accepts on port 2002):

* ``bundled_office_ready`` (after ``open``): the document at ``path`` is loaded and has
  a view, and every pending event has been handled (``processEventsToIdle``).
* ``bundled_office_idle`` (evaluator ``postconfig``): every pending event has been
  handled and no document window is disabled, so a ``ctrl+s`` already typed has written
  its file (LibreOffice disables the window while it saves; ``processEventsToIdle``
  alone returned mid-save). With no office running there is nothing to wait for.
"""

from __future__ import annotations

from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import SetupStepError
from osworld_mcp_env.tasks.context import TaskContext
from osworld_mcp_env.tasks.setup import register_setup_step

READY_STEP = "bundled_office_ready"
IDLE_STEP = "bundled_office_idle"
READY_TIMEOUT_S = 90.0
IDLE_TIMEOUT_S = 60.0
NO_OFFICE = 3  # the script's exit status when no office answers
TIMED_OUT = 4  # ... when the office answered but never got ready (1 stays Python's own crash)

# argv: path ("" = no document to wait for), deadline in seconds, NO_OFFICE, TIMED_OUT. Exit 0
# ready, TIMED_OUT (the last error on stderr), NO_OFFICE when nothing answered on the UNO port
# (at once when there is no path). Any error inside the poll is the office's transitional
# state (a document still loading has no frame yet, a start center has no URL): poll again.
# Only catching the bridge's own exceptions let such an error end the wait at once: the
# setup of an Impress task failed after 29 s with "did not load within 90 s".
_SCRIPT = """
import sys, time, uno
path, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
no_office, timed_out = int(sys.argv[3]), int(sys.argv[4])
url = uno.systemPathToFileUrl(path) if path else ""
local = uno.getComponentContext()
resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
connected, last = False, "not ready"
while time.monotonic() < deadline:
    try:
        ctx = resolver.resolve("uno:socket,host=127.0.0.1,port=2002;urp;StarOffice.ComponentContext")
        connected = True
        smgr = ctx.ServiceManager
        desktop = smgr.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
        smgr.createInstanceWithContext("com.sun.star.awt.Toolkit", ctx).processEventsToIdle()
        loaded, busy = not url, False
        docs = desktop.getComponents().createEnumeration()
        while docs.hasMoreElements():
            doc = docs.nextElement()
            view = doc.getCurrentController() if hasattr(doc, "getCurrentController") else None
            frame = view.getFrame() if view is not None else None
            window = frame.getContainerWindow() if frame is not None else None
            mine = hasattr(doc, "getURL") and doc.getURL() == url
            loaded = loaded or (mine and window is not None)
            # A save in progress disables its window (the greyed toolbars) until the file is written.
            busy = busy or (window is not None and not window.isEnabled())
        if loaded and not busy:
            sys.exit(0)
        last = "busy" if busy else "not loaded"
    except Exception as exc:
        last = f"{type(exc).__name__}: {exc}"
    if not connected and not path:
        sys.exit(no_office)
    time.sleep(0.1)
print(last, file=sys.stderr)
sys.exit(timed_out if connected else no_office)
"""


def _office_wait(desktop: Desktop, path: str, timeout: float, attempts: int = 3) -> tuple[int, str]:
    """Runs the wait inside the desktop: (exit status, last line of its stderr).

    The UNO client itself can die by a signal while the office is between states
    (SIGSEGV seen once in a long run beside another desktop): that is retried, a
    verdict of the script (loaded, no office, timed out) is not.
    """
    for _ in range(attempts):
        command = ["python3", "-c", _SCRIPT, path, str(timeout), str(NO_OFFICE), str(TIMED_OUT)]
        result = desktop.execute(command, timeout=timeout + 15.0)
        if result.returncode >= 0:
            break
    lines = result.error.strip().splitlines()
    return result.returncode, lines[-1] if lines else ""


@register_setup_step(READY_STEP)
def office_ready(
    desktop: Desktop, context: TaskContext, /, path: str, timeout: Any = READY_TIMEOUT_S
) -> None:
    """Waits until LibreOffice has loaded ``path`` and handled every pending event."""
    code, last = _office_wait(desktop, path, float(timeout))
    if code != 0:
        why = {NO_OFFICE: "no office answered on UNO", TIMED_OUT: "the document did not load"}
        what = why.get(code, f"the wait script failed (exit {code})")
        raise SetupStepError(f"{READY_STEP}: {what} within {float(timeout):g} s ({path}): {last}")


@register_setup_step(IDLE_STEP)
def office_idle(desktop: Desktop, context: TaskContext, /, timeout: Any = IDLE_TIMEOUT_S) -> None:
    """Waits until LibreOffice has handled every pending event (a typed ``ctrl+s`` has saved)."""
    code, last = _office_wait(desktop, "", float(timeout))
    if code not in (0, NO_OFFICE):
        what = "the office stayed busy" if code == TIMED_OUT else f"the wait script failed (exit {code})"
        raise SetupStepError(f"{IDLE_STEP}: {what} for {float(timeout):g} s: {last}")


def open_document(path: str) -> list[dict[str, Any]]:
    """Setup steps: open ``path`` in LibreOffice and wait until it is loaded."""
    return [
        {"type": "open", "parameters": {"path": path}},
        {"type": READY_STEP, "parameters": {"path": path}},
    ]


def idle_postconfig() -> list[dict[str, Any]]:
    """Evaluator ``postconfig`` of an office task: let a typed save finish before the getters read."""
    return [{"type": IDLE_STEP, "parameters": {}}]
