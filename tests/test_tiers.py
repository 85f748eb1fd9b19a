"""The unit tier is honest: starting a desktop or a VM from a test without its marker fails that test.

The inner runs use this directory's conftest (tests/conftest.py) in a pytest process of their
own (pytester; in this process, this run's own guard would judge them too). The guarded
``start`` is called on a bare object: the guard speaks before any desktop would start, and a
marked test reaches the real ``start``, which fails on the bare object with an
AttributeError, so no desktop or VM is needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
QUIET = ("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning")

INNER = """
import pytest
from osworld_mcp_env.backends.libvirt.desktop import LibvirtDesktop
from osworld_mcp_env.backends.local.desktop import LocalDesktop


def start(cls):
    cls.start(object.__new__(cls))


def test_unmarked_local():
    start(LocalDesktop)


def test_unmarked_vm():
    start(LibvirtDesktop)


@pytest.fixture(scope="module")
def started():
    start(LocalDesktop)


def test_unmarked_through_a_module_fixture(started):
    pass


@pytest.mark.desktop
def test_marked_local_reaches_the_real_start():
    with pytest.raises(AttributeError):
        start(LocalDesktop)


@pytest.mark.libvirt
def test_marked_vm_reaches_the_real_start():
    with pytest.raises(AttributeError):
        start(LibvirtDesktop)


@pytest.mark.desktop
def test_a_vm_needs_the_libvirt_marker_not_the_desktop_one():
    start(LibvirtDesktop)
"""


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makepyfile(desktop_support=(TESTS / "desktop_support.py").read_text())
    pytester.makepyfile(test_inner=INNER)
    return pytester


def test_a_desktop_or_vm_started_without_its_marker_fails_the_test(inner: pytest.Pytester) -> None:
    result = inner.runpytest_subprocess(*QUIET)
    result.assert_outcomes(passed=2, failed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_unmarked_local starts a LocalDesktop without the `desktop` marker*",
            "*test_unmarked_vm starts a LibvirtDesktop without the `libvirt` marker*",
            "*test_a_vm_needs_the_libvirt_marker_not_the_desktop_one starts a LibvirtDesktop*",
        ]
    )
    assert "test_unmarked_through_a_module_fixture starts a LocalDesktop" in result.stdout.str()


def test_the_unit_tier_deselects_every_marked_test(inner: pytest.Pytester) -> None:
    result = inner.runpytest_subprocess(*QUIET, "-m", "not desktop and not libvirt")
    result.assert_outcomes(failed=2, errors=1)  # the unmarked ones, which is why the guard exists


def test_ci_fails_instead_of_skipping_when_the_desktop_cannot_run(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No binaries on PATH: desktop_missing() names them, as on a machine without the setup.
    monkeypatch.setenv("PATH", str(inner.mkdir("empty-bin")))
    monkeypatch.delenv("OSWORLD_REQUIRE_DESKTOP", raising=False)  # .ci/run sets it for the outer run
    skipped = inner.runpytest_subprocess(*QUIET, "-k", "test_marked_local")
    skipped.assert_outcomes(skipped=1)
    monkeypatch.setenv("OSWORLD_REQUIRE_DESKTOP", "1")
    required = inner.runpytest_subprocess(*QUIET, "-k", "test_marked_local")
    assert required.ret == pytest.ExitCode.USAGE_ERROR
    required.stderr.fnmatch_lines(["*OSWORLD_REQUIRE_DESKTOP=1 and 1 selected tests need the embedded*"])
    # Without desktop tests selected, nothing is required.
    assert inner.runpytest_subprocess(*QUIET, "-k", "test_marked_vm").ret == pytest.ExitCode.OK
