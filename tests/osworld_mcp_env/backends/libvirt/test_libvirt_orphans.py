"""A desktop VM whose owner process dies without ``close()`` stops, and the sweep removes what is left.

The owner rule (who may be swept) is checked on hand-made owner records, without a VM.
The VM test kills its owner with SIGKILL as soon as the domain runs, long before the
guest boots, so it takes seconds once the image exists.
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from libvirt_support import qemu_processes
from osworld_mcp_env.backends.libvirt.vm_owner import (
    OWNER_NS,
    DomainOwner,
    OwnerHost,
    process_start,
    sweep_orphaned_domains,
)
from polling import wait_until

# Owns a desktop VM until killed; the constructor waits for the guest, which the test never lets happen.
OWNER = """
import sys
from pathlib import Path
from osworld_mcp_env.backends.libvirt.desktop import LibvirtDesktop, LibvirtDesktopConfig
LibvirtDesktop(LibvirtDesktopConfig(image_dir=Path(sys.argv[1]), uri=sys.argv[2], work_dir=Path(sys.argv[3])))
"""


def _ended_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_owner_metadata_round_trips_and_parses_as_libvirt_returns_it() -> None:
    owner = DomainOwner.this_process(Path("/tmp/osworld-a'b\"&<c>-x"))
    assert DomainOwner.from_xml(owner.to_xml()) == owner
    # libvirt's metadata() hands back the element without its namespace.
    fields = 'hostname="h" boot_id="b" pid_namespace="pid:[1]" pid="12" started="34" instance_dir="/w/o-1"'
    returned = f"<owner {fields}/>"
    parsed = DomainOwner.from_xml(returned)
    assert parsed == DomainOwner(OwnerHost("h", "b", "pid:[1]"), 12, 34, Path("/w/o-1"))
    for other in ('<owner hostname="h"/>', "<name>osworld-1</name>", "not xml"):
        with pytest.raises(ValueError):
            DomainOwner.from_xml(other)


def test_only_an_owner_surely_ended_is_dead() -> None:
    here = OwnerHost.this()
    alive = DomainOwner.this_process(Path("/w/osworld-1-x"))
    ended = dataclasses.replace(alive, pid=_ended_pid())
    assert not alive.is_dead(here)
    assert ended.is_dead(here)
    # A pid taken by a later process: the start time tells them apart.
    assert dataclasses.replace(alive, started=alive.started - 1).is_dead(here)
    # The same machine before a reboot: every process of that boot has ended.
    assert alive.is_dead(dataclasses.replace(here, boot_id="an earlier boot"))
    # Owners whose processes cannot be seen from here are never judged dead.
    assert not ended.is_dead(dataclasses.replace(here, hostname="another machine"))
    assert not ended.is_dead(dataclasses.replace(here, pid_namespace="pid:[0]"))


@pytest.mark.libvirt
@pytest.mark.slow
def test_a_killed_owner_leaves_no_vm_running_and_the_sweep_removes_its_domain(
    vm_image: Path, libvirt_daemon: str, tmp_path: Path
) -> None:
    import libvirt

    conn = libvirt.open(libvirt_daemon)
    stderr = (tmp_path / "owner.err").open("w")
    child = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(vm_image), libvirt_daemon, str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )

    def child_domain() -> tuple[Any, DomainOwner] | None:
        assert child.poll() is None, (tmp_path / "owner.err").read_text()[-2000:]
        for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
            try:
                owner = DomainOwner.from_xml(dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, OWNER_NS, 0))
            except (libvirt.libvirtError, ValueError):
                continue  # another tool's domain, or one gone meanwhile
            # Running, not only starting: libvirt has registered the autodestroy by then.
            if owner.pid == child.pid and dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING:
                return dom, owner
        return None

    dom = None
    try:
        dom, owner = wait_until(child_domain, timeout=300, what="the owner's domain running")
        name = dom.name()
        assert owner.started == process_start(child.pid) and owner.instance_dir.parent == tmp_path
        assert name not in sweep_orphaned_domains(conn)  # running, its owner alive
        child.send_signal(signal.SIGKILL)
        child.wait()
        wait_until(lambda: not dom.isActive(), timeout=120, what="libvirt destroying the VM")
        wait_until(lambda: not qemu_processes(name), timeout=60, what="the VM's QEMU gone")
        # What autodestroy leaves: the definition (inactive) and the overlay's folder.
        assert name in conn.listDefinedDomains() and (owner.instance_dir / "overlay.qcow2").is_file()
        assert name in sweep_orphaned_domains(conn)
        assert name not in [d.name() for d in conn.listAllDomains()]
        assert not owner.instance_dir.exists()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        stderr.close()
        if dom is not None and dom.name() in [d.name() for d in conn.listAllDomains()]:
            if dom.isActive():
                dom.destroy()
            dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
        conn.close()
