"""A UNO connection to the desktop's running LibreOffice, owned by a server lifespan.

``import uno`` works only in Debian's CPython 3.11 (or a venv built on it with
system site packages), so it is imported lazily: the package imports anywhere,
and a tool called without LibreOffice gets a clear error instead.

The connection is made on first use and remade after LibreOffice restarts (a
``DisposedException`` resets it), so a server can start before the office does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_servers.config import ServerConfig

T = TypeVar("T")

CALC = "com.sun.star.sheet.SpreadsheetDocument"
WRITER = "com.sun.star.text.TextDocument"
IMPRESS = "com.sun.star.presentation.PresentationDocument"

_KIND_NAMES = {CALC: "Calc spreadsheet", WRITER: "Writer document", IMPRESS: "Impress presentation"}

# One office tool call at a time, across the Calc, Writer and Impress servers of this
# process. A call that timed out on the host (the office was stopped) keeps running in
# its worker thread and resumes with the office; pyuno resolves a proxy's methods lazily
# (introspection, remote type queries) and two threads doing that at once on a fresh
# bridge get spurious ``AttributeError: getActiveSheet``, which ``_supports`` read as
# "not a Calc document": "No Calc spreadsheet is open". The office runs UNO calls one at
# a time anyway (its SolarMutex), so serialising costs nothing in throughput.
OFFICE_CALLS = threading.RLock()


def _uno() -> Any:
    try:
        import uno
    except ImportError as exc:  # pragma: no cover - depends on the interpreter
        raise ToolError(
            "python3-uno is not importable in this interpreter; run the server with Debian's python3.11 "
            "(or a venv made with --system-site-packages on it)"
        ) from exc
    return uno


class UnoSession:
    """A lazily made, self-healing UNO connection.

    Args:
        url: The UNO URL (``uno:pipe,name=...;urp;StarOffice.ComponentContext``).
        timeout_s: How long ``desktop()`` retries a refused connection while an office
            process runs (it is starting, or restarting after a crash).
    """

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._ctx: Any = None
        self._desktop: Any = None
        self._documents: dict[str, Any] = {}  # kind -> the document a tool last used

    def desktop(self) -> Any:
        """Returns ``com.sun.star.frame.Desktop`` of the running office, connecting if needed."""
        with self._lock:
            if self._desktop is None:
                self._connect()
            return self._desktop

    @property
    def context(self) -> Any:
        """The remote component context (after :meth:`desktop`)."""
        self.desktop()
        return self._ctx

    def service(self, name: str) -> Any:
        """Creates a service by name in the remote office, reconnecting once if the bridge died.

        The getter is called as a method: pyuno reads ``ctx.ServiceManager`` through
        introspection, which turns any remote failure (a disposed bridge included)
        into "UnknownPropertyException: cannot get value ServiceManager"; the method
        call raises the remote exception itself.
        """
        return self._reconnecting(
            lambda: self.context.getServiceManager().createInstanceWithContext(name, self._ctx)
        )

    def _reconnecting(self, call: Callable[[], T]) -> T:
        """``call()``, made once more on a new connection if the bridge died since the last call.

        The office was restarted (an env reset) or killed: reconnect here rather than
        fail the agent's first call, or say at once that no office runs.
        """
        try:
            return call()
        except Exception as exc:
            if not _is_disposed(exc):
                raise
            self.reset()
            return call()

    def _connect(self) -> None:
        uno = _uno()
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
        # A refusal is retried only while an office process exists: one that is starting
        # (or restarting) accepts within seconds on an idle machine but far later on a busy
        # one, so the wait follows the process, not a guess of its start-up time.
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                ctx = resolver.resolve(self.url)
                break
            except Exception as exc:  # NoConnectException is a uno.Exception subclass
                if not type(exc).__name__.endswith("NoConnectException"):
                    raise ToolError(
                        f"LibreOffice is not reachable at {self.url} ({type(exc).__name__})"
                    ) from exc
                if not office_process_running():
                    raise ToolError("LibreOffice is not running; open a document in it first") from exc
                if time.monotonic() > deadline:
                    raise ToolError(
                        f"LibreOffice runs but did not accept a UNO connection at {self.url} within "
                        f"{self.timeout_s:g} s; was it started with a matching --accept string?"
                    ) from exc
                time.sleep(0.05)
        self._ctx = ctx
        self._desktop = ctx.getServiceManager().createInstanceWithContext("com.sun.star.frame.Desktop", ctx)

    def reset(self) -> None:
        """Drops the connection; the next call reconnects."""
        with self._lock:
            self._ctx = None
            self._desktop = None
            self._documents.clear()

    def on_error(self, exc: BaseException) -> None:
        """Resets the connection when ``exc`` says the bridge or office is gone."""
        if _uno_name(exc) in {"DisposedException", "RuntimeException"}:
            self.reset()

    def document(self, kind: str) -> Any:
        """Returns the open document of ``kind`` (``CALC``, ``WRITER``, ``IMPRESS``).

        The current (last active) component wins; otherwise the first open one of that kind.

        Raises:
            ToolError: If no such document is open.
        """
        current = self._reconnecting(lambda: self.desktop().getCurrentComponent())
        desktop = self.desktop()
        remembered = self._documents.get(kind)
        # Each UNO call is a round trip: with no current window (no window manager) the
        # remembered document costs one liveness check instead of a scan of every document.
        if current is not None and _supports(current, kind):
            self._documents[kind] = current
            return current
        if current is None and remembered is not None and _alive(remembered):
            return remembered
        components = desktop.getComponents().createEnumeration()
        while components.hasMoreElements():
            comp = components.nextElement()
            if _supports(comp, kind):
                self._documents[kind] = comp
                return comp
        self._documents.pop(kind, None)
        raise ToolError(f"No {_KIND_NAMES.get(kind, kind)} is open in LibreOffice; open one first")

    def close(self) -> None:
        """Forgets the connection (the office keeps running)."""
        self.reset()


OFFICE_PROCESS_NAMES = frozenset({"soffice", "soffice.bin", "oosplash"})


def office_process_running() -> bool:
    """True while a LibreOffice process (its launcher script, splash or office) is running.

    The tool host shares the desktop's PID namespace, so ``/proc`` lists the user's processes.
    """
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "comm").read_text().strip() in OFFICE_PROCESS_NAMES:
                return True
        except OSError:
            continue  # exited while we looked
    return False


def _uno_name(exc: BaseException) -> str:
    """The exception's UNO type name without its module (pyuno names them ``com.sun.star....X``)."""
    return type(exc).__name__.rsplit(".", 1)[-1]


def _is_disposed(exc: BaseException) -> bool:
    """True for pyuno's ``DisposedException``: the bridge to the office is gone."""
    return _uno_name(exc) == "DisposedException"


def _supports(component: Any, kind: str) -> bool:
    """``supportsService`` for components that may lack it (the Start Center, a help window)."""
    try:
        return bool(component.supportsService(kind))
    except AttributeError:
        return False


def _alive(doc: Any) -> bool:
    """True while a document proxy still has a live frame (closed ones raise or have none)."""
    try:
        controller = doc.getCurrentController()
        return controller is not None and controller.getFrame() is not None
    except Exception:  # DisposedException and friends: the document was closed
        return False


class OfficeApp:
    """The app context of the LibreOffice namespaces: a UNO session and the config."""

    def __init__(self, config: ServerConfig, kind: str) -> None:
        self.config = config
        self.kind = kind
        self.uno = UnoSession(config.uno_url, config.uno_timeout_s)
        self.call_guard = OFFICE_CALLS  # the registry holds it around each tool call

    def doc(self) -> Any:
        """Returns the document of this app's kind."""
        return self.uno.document(self.kind)

    def on_error(self, exc: BaseException) -> None:
        """Called by the registry when a tool raised: heals a dead connection."""
        self.uno.on_error(exc)

    def props(self, **values: Any) -> tuple[Any, ...]:
        """Returns a tuple of ``PropertyValue`` from keyword arguments."""
        uno = _uno()
        out = []
        for name, value in values.items():
            pv = uno.createUnoStruct("com.sun.star.beans.PropertyValue")
            pv.Name = name
            pv.Value = value
            out.append(pv)
        return tuple(out)

    def dispatch(self, command: str, **args: Any) -> None:
        """Runs a ``.uno:`` dispatch command on the document's frame."""
        frame = self.doc().getCurrentController().getFrame()
        helper = self.uno.service("com.sun.star.frame.DispatchHelper")
        helper.executeDispatch(frame, command, "", 0, self.props(**args))


def office_lifespan(kind: str) -> Any:
    """Returns a lifespan factory that yields an :class:`OfficeApp` for ``kind``."""

    @asynccontextmanager
    async def lifespan(config: ServerConfig) -> AsyncIterator[OfficeApp]:
        app = OfficeApp(config, kind)
        try:
            yield app
        finally:
            app.uno.close()

    return lifespan


def to_url(path: str | os.PathLike[str]) -> str:
    """Returns the ``file://`` URL of a local path."""
    return _uno().systemPathToFileUrl(str(Path(path).expanduser().resolve()))


def from_url(url: str) -> Path:
    """Returns the local path of a ``file://`` URL."""
    return Path(_uno().fileUrlToSystemPath(url))


def stat_or_none(path: Path) -> tuple[float, int] | None:
    """Returns ``(mtime_ns, size)`` or None when the file does not exist."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)
