"""Who owns a desktop VM, recorded in its libvirt domain, and the sweep of VMs whose owner died.

A :class:`~osworld_mcp_env.backends.libvirt.desktop.LibvirtDesktop` starts its domain with
``VIR_DOMAIN_START_AUTODESTROY``: libvirt destroys the VM when the owner's connection
closes, which a dead process does however it died (SIGKILL, the OOM killer, a Ray
actor's end, SIGTERM with no ``atexit``). Its ``close()`` never ran then, so the
persistent definition (with its snapshot metadata) and the instance directory
(overlay, console log, fw_cfg file) stay behind. The owner is recorded in the domain's
``<metadata>`` so that a later process can tell those leftovers from the VMs of owners
that are alive, and remove them (:func:`sweep_orphaned_domains`).
"""

from __future__ import annotations

import os
import shutil
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

OWNER_NS = "urn:osworld-mcp-env:vm-owner:1"
OWNER_TAG = f"{{{OWNER_NS}}}owner"
_OWNER_PREFIX = "osworld"


@dataclass(frozen=True)
class OwnerHost:
    """The machine (and pid namespace) a process runs on, as far as another process can tell.

    Attributes:
        hostname: The machine's hostname.
        boot_id: ``/proc/sys/kernel/random/boot_id``: new at every boot, so a different one
            with the same hostname means the machine rebooted since.
        pid_namespace: The process's pid namespace (``/proc/self/ns/pid``): containers share
            the kernel's boot id, and a pid means something only in its own namespace.
    """

    hostname: str
    boot_id: str
    pid_namespace: str

    @classmethod
    def this(cls) -> OwnerHost:
        """The machine and pid namespace of this process."""
        return cls(
            hostname=socket.gethostname(),
            boot_id=Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            pid_namespace=os.readlink("/proc/self/ns/pid"),
        )


@dataclass(frozen=True)
class DomainOwner:
    """The process that owns a VM, and the files its ``close()`` would delete.

    Attributes:
        host: Where the owner runs.
        pid: The owner's process id.
        started: The owner's start time (``/proc/<pid>/stat`` field 22, clock ticks since
            boot): with the pid it names one process, not a later one that reuses the pid.
        instance_dir: The VM's directory of overlay, console log and fw_cfg file.
    """

    host: OwnerHost
    pid: int
    started: int
    instance_dir: Path

    @classmethod
    def this_process(cls, instance_dir: Path) -> DomainOwner:
        """This process as the owner of the VM whose files are in ``instance_dir``."""
        pid = os.getpid()
        started = process_start(pid)
        if started is None:  # /proc/self always exists
            raise RuntimeError("/proc/self/stat is unreadable: is /proc mounted?")
        return cls(OwnerHost.this(), pid, started, instance_dir)

    def to_xml(self) -> str:
        """The ``<metadata>`` element that records this owner in a domain's XML."""
        fields = {
            "hostname": self.host.hostname,
            "boot_id": self.host.boot_id,
            "pid_namespace": self.host.pid_namespace,
            "pid": str(self.pid),
            "started": str(self.started),
            "instance_dir": str(self.instance_dir),
        }
        attrs = " ".join(f"{key}={quoteattr(value)}" for key, value in fields.items())
        return f"<{_OWNER_PREFIX}:owner xmlns:{_OWNER_PREFIX}={quoteattr(OWNER_NS)} {attrs}/>"

    @classmethod
    def from_xml(cls, xml: str) -> DomainOwner:
        """Parses the element :meth:`to_xml` wrote.

        As in the domain XML, or as libvirt's ``metadata()`` returns it: without the
        namespace, by which it selected the element.

        Raises:
            ValueError: ``xml`` is not an owner element or lacks a field.
        """
        try:
            element = ET.fromstring(xml)
        except ET.ParseError as exc:
            raise ValueError(f"Owner metadata is not XML: {exc}") from exc
        if element.tag not in (OWNER_TAG, "owner"):
            raise ValueError(f"Expected an {OWNER_TAG} element, got {element.tag}.")
        try:
            host = OwnerHost(
                element.attrib["hostname"], element.attrib["boot_id"], element.attrib["pid_namespace"]
            )
            return cls(
                host,
                int(element.attrib["pid"]),
                int(element.attrib["started"]),
                Path(element.attrib["instance_dir"]),
            )
        except KeyError as exc:
            raise ValueError(f"Owner metadata lacks {exc.args[0]!r}: {xml}") from exc

    def is_dead(self, here: OwnerHost) -> bool:
        """True only when the owner process has surely ended, seen from a process on ``here``.

        Another hostname is another machine: never dead from here (its processes cannot be
        seen). The same hostname with another boot id is this machine before a reboot: dead.
        In this boot, an owner in another pid namespace cannot be seen either; in ours it is
        dead when no process has its pid and start time.
        """
        if self.host.hostname != here.hostname:
            return False
        if self.host.boot_id != here.boot_id:
            return True
        if self.host.pid_namespace != here.pid_namespace:
            return False
        return process_start(self.pid) != self.started


def process_start(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot), or None when none runs.

    A zombie counts as ended: its sockets, the libvirt connection among them, are closed.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields count from its last ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def sweep_orphaned_domains(conn: Any) -> list[str]:
    """Undefines the stopped VMs whose owner died, and deletes their instance directories.

    Autodestroy stops a dead owner's VM but leaves its definition and files (see the module
    docstring); a desktop sweeps when it starts, so they do not pile up run after run. Only
    inactive domains with this project's owner metadata whose owner :meth:`DomainOwner.is_dead`
    are touched: a running VM, another tool's domain, or one of a live owner (or of one that
    cannot be judged from here: another machine or pid namespace) is left alone.

    Args:
        conn: An open ``libvirt.virConnect``.

    Returns:
        The names of the domains undefined.
    """
    import libvirt

    here = OwnerHost.this()
    swept = []
    for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_INACTIVE):
        try:
            name = dom.name()
            owner = DomainOwner.from_xml(dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, OWNER_NS, 0))
            if not owner.is_dead(here) or dom.isActive():  # started since the listing
                continue
            dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
        except (libvirt.libvirtError, ValueError):
            continue  # no owner metadata (not ours), or undefined meanwhile by another sweep
        # The backend names the directory after the domain: never delete a path that is not so named.
        if owner.instance_dir.name.startswith(f"{name}-"):
            shutil.rmtree(owner.instance_dir, ignore_errors=True)
        swept.append(name)
    return swept
