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

# argv: path ("" = no document to wait for), deadline in seconds, NO_OFFICE. Exit 0 ready,
# 1 timed out, NO_OFFICE when nothing answered on the UNO port (at once when there is no path).
_SCRIPT = """
import sys, time, uno
from com.sun.star.connection import NoConnectException
from com.sun.star.lang import DisposedException
from com.sun.star.uno import RuntimeException
path, deadline, no_office = sys.argv[1], time.monotonic() + float(sys.argv[2]), int(sys.argv[3])
url = uno.systemPathToFileUrl(path) if path else ""
local = uno.getComponentContext()
resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
connected = False
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
            loaded = loaded or (doc.getURL() == url and view is not None)
            # A save in progress disables its window (the greyed toolbars) until the file is written.
            busy = busy or (view is not None and not view.getFrame().getContainerWindow().isEnabled())
        if loaded and not busy:
            sys.exit(0)
    except (NoConnectException, DisposedException, RuntimeException):
        pass
    if not connected and not path:
        sys.exit(no_office)
    time.sleep(0.1)
sys.exit(1 if connected else no_office)
"""


def _office_wait(desktop: Desktop, path: str, timeout: float) -> int:
    command = ["python3", "-c", _SCRIPT, path, str(timeout), str(NO_OFFICE)]
    return desktop.execute(command, timeout=timeout + 15.0).returncode


@register_setup_step(READY_STEP)
def office_ready(
    desktop: Desktop, context: TaskContext, /, path: str, timeout: Any = READY_TIMEOUT_S
) -> None:
    """Waits until LibreOffice has loaded ``path`` and handled every pending event."""
    code = _office_wait(desktop, path, float(timeout))
    if code != 0:
        why = "no office answered on UNO" if code == NO_OFFICE else "the document did not load"
        raise SetupStepError(f"{READY_STEP}: {why} within {float(timeout):g} s ({path}).")


@register_setup_step(IDLE_STEP)
def office_idle(desktop: Desktop, context: TaskContext, /, timeout: Any = IDLE_TIMEOUT_S) -> None:
    """Waits until LibreOffice has handled every pending event (a typed ``ctrl+s`` has saved)."""
    code = _office_wait(desktop, "", float(timeout))
    if code not in (0, NO_OFFICE):
        raise SetupStepError(f"{IDLE_STEP}: the office stayed busy for {float(timeout):g} s.")


def open_document(path: str) -> list[dict[str, Any]]:
    """Setup steps: open ``path`` in LibreOffice and wait until it is loaded."""
    return [
        {"type": "open", "parameters": {"path": path}},
        {"type": READY_STEP, "parameters": {"path": path}},
    ]


def idle_postconfig() -> list[dict[str, Any]]:
    """Evaluator ``postconfig`` of an office task: let a typed save finish before the getters read."""
    return [{"type": IDLE_STEP, "parameters": {}}]
