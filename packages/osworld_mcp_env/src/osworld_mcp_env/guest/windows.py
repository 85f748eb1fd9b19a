"""Window list and focus through EWMH properties (no wmctrl spawns)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from Xlib import X, Xatom
from Xlib import error as xerror
from Xlib.protocol import event as xevent

from osworld_mcp_env.guest.layout import LayoutMemory, LayoutSample, TopWindow
from osworld_mcp_env.guest.wire import WindowInfo as Window
from osworld_mcp_env.guest.xdisplay import XConnection

# What announces a change to a window's description: its properties (title, class) and the
# structure (size, position, parent, existence) of it and of every ancestor below the root.
WATCHED_EVENTS = X.PropertyChangeMask | X.StructureNotifyMask
# Events after which a watched window's ancestors, or the window an id names, may differ.
REWATCH_EVENTS = frozenset({X.ReparentNotify, X.DestroyNotify})
# On the root: a top-level window created, destroyed, mapped, unmapped, moved, resized or
# restacked (override-redirect popups included), and the screen itself resized.
ROOT_EVENTS = X.SubstructureNotifyMask | X.StructureNotifyMask


class WindowManager:
    """Reads and drives the EWMH window manager (openbox) of one display.

    Window descriptions are cached, exactly: before a window is first described, this
    connection selects the events that announce any change to the description on the
    window and its ancestors (``WATCHED_EVENTS``), so a new title or class, a resize, a
    move of the window or of its frame, a reparenting queues an event here. Every query
    makes a round trip first (the focus or the client list, read each time), which brings
    in every event the server sent before its reply, and any event drops the cache. A
    still desktop's focused window costs one request instead of five (the focus route
    rides on every observation; five requests were 13.8 ms under a VM's emulated CPU).
    A desktop client cannot take this connection's event selections away.

    The layout sample of the stale-frame guard (:meth:`layout`) is cached the same way,
    on the root's structure events, and every sample reported is kept by fingerprint
    (:attr:`memory`) so that a cited frame's layout can be compared point by point.
    """

    def __init__(self, xconn: XConnection) -> None:
        self._x = xconn
        self._described: dict[int, Window] = {}
        self._watched: set[int] = set()  # windows whose own and ancestors' events are selected
        self._frames: dict[int, int] = {}  # managed window -> its top-level ancestor (the WM's frame)
        self._tops: tuple[tuple[int, int], tuple[TopWindow, ...]] | None = None  # screen, root's children
        self._root_watched = False
        self.memory = LayoutMemory()

    def list(self) -> list[Window]:
        """Managed windows in stacking order, bottom first."""
        with self._x.session() as d:
            root = d.screen().root
            prop = root.get_full_property(d.intern_atom("_NET_CLIENT_LIST_STACKING"), Xatom.WINDOW)
            ids = list(prop.value) if prop else []
            self._drop_if_changed(d)
            out = []
            for wid in ids:
                info = self._lookup(d, wid)
                if info is not None:
                    out.append(info)
            return out

    def active(self) -> Window | None:
        """The focused window, if any."""
        with self._x.session() as d:
            root = d.screen().root
            prop = root.get_full_property(d.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
            self._drop_if_changed(d)
            if not prop or not prop.value or not prop.value[0]:
                return None
            return self._lookup(d, int(prop.value[0]))

    def layout(self) -> LayoutSample:
        """The layout sample now (bounds, viewable top-levels bottom first, focus), kept in :attr:`memory`."""
        with self._x.session() as d:
            root = d.screen().root
            if not self._root_watched:  # before the first read: a later change queues an event
                root.change_attributes(event_mask=ROOT_EVENTS)
                self._root_watched = True
            prop = root.get_full_property(d.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
            self._drop_if_changed(d)
            if self._tops is None:
                self._tops = self._read_tops(d)
            screen, tops = self._tops
            titles = {self._frames.get(w.window_id): w.title for w in self.list()}
            active = int(prop.value[0]) if prop and prop.value else 0
        windows = tuple(
            w if w.override_redirect else replace(w, title=titles.get(w.window_id, "")) for w in tops
        )
        sample = LayoutSample(screen=screen, windows=windows, active=active)
        self.memory.remember(sample)
        return sample

    @staticmethod
    def _read_tops(d) -> tuple[tuple[int, int], tuple[TopWindow, ...]]:
        """The screen's size and the root's viewable children, bottom first (``XQueryTree``'s order)."""
        root = d.screen().root
        size = root.get_geometry()
        tops = []
        for window in root.query_tree().children:
            try:
                attributes = window.get_attributes()
                if attributes.map_state != X.IsViewable:
                    continue
                g = window.get_geometry()
            except (xerror.BadWindow, xerror.BadDrawable):
                continue  # gone meanwhile: its DestroyNotify drops this read
            border = 2 * g.border_width
            tops.append(
                TopWindow(
                    window_id=window.id,
                    x=g.x,
                    y=g.y,
                    width=g.width + border,
                    height=g.height + border,
                    override_redirect=bool(attributes.override_redirect),
                )
            )
        return (size.width, size.height), tuple(tops)

    def find(self, name: str, *, strict: bool = False, by_class: bool = False) -> Window | None:
        """The topmost window whose title (or WM_CLASS) matches, like ``wmctrl -a/-Fa/-xa``."""
        needle = name if strict else name.lower()
        for window in reversed(self.list()):
            hay = window.wm_class if by_class else window.title
            if strict and hay == needle:
                return window
            if not strict and needle in hay.lower():
                return window
        return None

    def activate(self, window_id: int) -> None:
        """Asks the window manager to raise and focus a window (``_NET_ACTIVE_WINDOW``)."""
        self._client_message(window_id, "_NET_ACTIVE_WINDOW", [2, X.CurrentTime, 0, 0, 0])

    def close(self, window_id: int) -> None:
        """Asks the window manager to close a window politely (``_NET_CLOSE_WINDOW``)."""
        self._client_message(window_id, "_NET_CLOSE_WINDOW", [X.CurrentTime, 2, 0, 0, 0])

    def _client_message(self, window_id: int, atom: str, data: Sequence[int]) -> None:
        with self._x.session() as d:
            root = d.screen().root
            window = d.create_resource_object("window", window_id)
            message = xevent.ClientMessage(window=window, client_type=d.intern_atom(atom), data=(32, data))
            root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            d.sync()

    def _drop_if_changed(self, d) -> None:
        """Drops the cache when any event came in; call right after a round trip."""
        if not d.pending_events():
            return
        self._described.clear()
        self._tops = None
        while d.pending_events():
            if d.next_event().type in REWATCH_EVENTS:
                self._watched.clear()
                self._frames.clear()

    def _lookup(self, d, wid: int) -> Window | None:
        """``wid`` described, from the cache while no event since said it changed."""
        info = self._described.get(wid)
        if info is None:
            info = self._describe(d, wid)
            if info is not None:
                self._described[wid] = info
        return info

    def _describe(self, d, wid: int) -> Window | None:
        window = d.create_resource_object("window", wid)
        try:
            if wid not in self._watched:
                self._frames[wid] = self._watch(d, window)
                self._watched.add(wid)
            name_prop = window.get_full_property(d.intern_atom("_NET_WM_NAME"), d.intern_atom("UTF8_STRING"))
            title = name_prop.value.decode("utf-8", "replace") if name_prop else (window.get_wm_name() or "")
            if isinstance(title, bytes):
                title = title.decode("latin-1")
            wm_class = window.get_wm_class()
            geometry = window.get_geometry()
            origin = window.translate_coords(d.screen().root, 0, 0)
        except (xerror.BadWindow, xerror.BadDrawable):
            return None  # closed between listing and reading: not a window any more
        return Window(
            window_id=wid,
            title=str(title),
            wm_class=".".join(wm_class) if wm_class else "",
            x=-origin.x,
            y=-origin.y,
            width=geometry.width,
            height=geometry.height,
        )

    @staticmethod
    def _watch(d, window) -> int:
        """Selects ``WATCHED_EVENTS`` on the window and each ancestor below the root, before reading it.

        A change made after the selection reached the server queues an event, so a
        description read after it is either current or followed by an event. Returns
        the top-level ancestor's id (the window manager's frame around the window).
        """
        root = d.screen().root.id
        ignore = xerror.CatchError(xerror.BadWindow)  # gone meanwhile: its reads fail below
        while True:
            window.change_attributes(event_mask=WATCHED_EVENTS, onerror=ignore)
            parent = window.query_tree().parent
            if not parent or parent.id in (root, X.NONE):
                return int(window.id)
            window = parent
