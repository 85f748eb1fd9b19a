"""The test tiers hold: a test that starts a desktop or a VM carries the marker that selects it.

``-m "not desktop and not libvirt"`` is the unit tier; it is honest only while every
test that starts an embedded desktop is marked ``desktop`` and every test that boots a
VM ``libvirt``. Starting one from an unmarked test (in a fixture or in the test) fails
that test here, at the start, whatever the machine has.

Where the embedded desktop cannot run, the ``desktop`` tests are skipped; with
``OSWORLD_REQUIRE_DESKTOP=1`` (``.ci/run``) the run stops with a usage error instead, so
a CI machine without a working desktop fails rather than passing on skips.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from desktop_support import REQUIRE_DESKTOP, desktop_missing
from osworld_mcp_env.backends.libvirt.desktop import LibvirtDesktop
from osworld_mcp_env.backends.local.desktop import LocalDesktop

pytest_plugins = ["pytester"]  # tests/test_tiers.py runs a pytest inside this one

# What starts a desktop -> the marker its test must carry.
GUARDED: tuple[tuple[type, str], ...] = ((LocalDesktop, "desktop"), (LibvirtDesktop, "libvirt"))

_running: list[pytest.Item] = []  # the test whose setup, call or teardown runs now


@pytest.hookimpl(trylast=True)  # after -m and -k deselected theirs: only selected tests need a desktop
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = desktop_missing()
    if reason is None:
        return
    needing = [item for item in items if "desktop" in item.keywords]
    if REQUIRE_DESKTOP and needing:
        raise pytest.UsageError(
            f"OSWORLD_REQUIRE_DESKTOP=1 and {len(needing)} selected tests need the embedded desktop, "
            f"which cannot run here: {reason}."
        )
    skip = pytest.mark.skip(reason=f"embedded desktop unavailable: {reason}")
    for item in needing:
        item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


def _guarded(start: Callable[..., Any], marker: str) -> Callable[..., Any]:
    def checked_start(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = _running[-1] if _running else None
        if item is not None and item.get_closest_marker(marker) is None:
            pytest.fail(
                f"{item.nodeid} starts a {type(self).__name__} without the `{marker}` marker: add "
                f"`@pytest.mark.{marker}` (or `pytestmark = pytest.mark.{marker}`) so that "
                f'`-m "not desktop and not libvirt"` leaves it out.',
                pytrace=False,
            )
        return start(self, *args, **kwargs)

    return checked_start


@pytest.fixture(scope="session", autouse=True)
def _tiers_hold() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for cls, marker in GUARDED:
            patch.setattr(cls, "start", _guarded(cls.start, marker))
        yield
