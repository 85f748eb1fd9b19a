"""The libvirt domain of one desktop VM: its XML, and whether KVM can run it.

Kept apart from the backend's lifecycle so that the VM's shape (direct kernel
boot, disk, user-mode network, per-VM settings) is one readable function.
"""

from __future__ import annotations

import os
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from osworld_mcp_env.backends.libvirt.vm_owner import DomainOwner

KERNEL_CMDLINE = "root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet"
# The guest NIC's PCI slot: without an explicit one, libvirt puts it where the VGA goes.
NIC_PCI_ADDR = "0x10"
# The display of an image booted by its own boot loader (OSWorld's Ubuntu runs Xorg on it).
VIDEO_XML = "\n    <video><model type='vga'/></video>"
_warned: set[str] = set()


@dataclass(frozen=True)
class DomainSpec:
    """What one VM is made of.

    Attributes:
        name: Domain name (unique on the libvirt host).
        accel: ``kvm`` or ``tcg``.
        memory_mb: Guest RAM.
        vcpus: Guest CPUs.
        kernel: Kernel image on the libvirt host (direct boot: this project's image has no
            boot loader); None boots the disk's own boot loader (OSWorld's ``Ubuntu.qcow2``),
            with a VGA display for its desktop.
        initrd: Initramfs beside the kernel (None with it).
        disk: The VM's qcow2 overlay (over the read-only base image).
        console_log: File that receives the guest's serial console.
        host_port: Loopback port of the libvirt host forwarded to the guest server.
        guest_port: The guest server's TCP port inside the VM.
        fw_cfg_file: File handed to the guest as ``opt/osworld/config`` (token, screen size).
        owner: The process that owns the VM, recorded in the domain's ``<metadata>`` so a
            later process can remove the VM's leftovers once that owner died
            (``vm_owner.sweep_orphaned_domains``).
        forwards: More (host port, guest port) pairs forwarded from the host's loopback
            (OSWorld's Chrome DevTools 9222 and VLC 8080).
    """

    name: str
    accel: str
    memory_mb: int
    vcpus: int
    kernel: Path | None
    initrd: Path | None
    disk: Path
    console_log: Path
    host_port: int
    guest_port: int
    fw_cfg_file: Path
    owner: DomainOwner
    forwards: tuple[tuple[int, int], ...] = ()


def domain_xml(spec: DomainSpec) -> str:
    """The libvirt XML of the VM.

    User-mode networking (no bridge, no root network setup) with ``restrict=on``:
    the guest reaches neither the host nor the outside, and the only way in is the
    guest server's port (and ``forwards``), forwarded to the host's loopback only. No
    graphics: the desktop is the guest's Xvfb, read through the guest server; a disk
    booted by its own boot loader gets a VGA device for its X server, still no viewer.
    """
    kvm = spec.accel == "kvm"
    ports = ((spec.host_port, spec.guest_port), *spec.forwards)
    netdev = "user,id=osw0,restrict=on" + "".join(f",hostfwd=tcp:127.0.0.1:{h}-:{g}" for h, g in ports)
    args = [
        "-netdev", netdev,
        "-device", f"virtio-net-pci,netdev=osw0,bus=pci.0,addr={NIC_PCI_ADDR}",
        "-fw_cfg", f"name=opt/osworld/config,file={spec.fw_cfg_file}",
    ]  # fmt: skip
    commandline = "\n".join(f"    <qemu:arg value={quoteattr(arg)}/>" for arg in args)
    return f"""<domain type='{"kvm" if kvm else "qemu"}' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{escape(spec.name)}</name>
  <metadata>{spec.owner.to_xml()}</metadata>
  <memory unit='MiB'>{spec.memory_mb}</memory>
  <vcpu>{spec.vcpus}</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
{_boot_xml(spec)}
  </os>
  <features><acpi/></features>
  <cpu mode='{"host-passthrough" if kvm else "maximum"}'/>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' cache='unsafe'/>
      <source file={quoteattr(str(spec.disk))}/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <serial type='file'>
      <source path={quoteattr(str(spec.console_log))}/>
      <target port='0'/>
    </serial>
    <memballoon model='none'/>{"" if spec.kernel else VIDEO_XML}
  </devices>
  <qemu:commandline>
{commandline}
  </qemu:commandline>
</domain>
"""


def _boot_xml(spec: DomainSpec) -> str:
    """Direct kernel boot (this project's image), or the disk's boot loader."""
    if spec.kernel is None:
        return "    <boot dev='hd'/>"
    return (
        f"    <kernel>{escape(str(spec.kernel))}</kernel>\n"
        f"    <initrd>{escape(str(spec.initrd))}</initrd>\n"
        f"    <cmdline>{KERNEL_CMDLINE}</cmdline>"
    )


def kvm_usable() -> bool:
    """Whether KVM can run guests on this machine.

    ``/dev/kvm`` alone is not enough: on nested machines whose CPU does not
    advertise vmx/svm, creating a VM succeeds and the guest then hangs in its
    kernel decompressor (measured, notes/feasibility.md section 6).
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = {word for line in f if line.startswith("flags") for word in line.split()}
    except OSError:
        return False
    return bool(flags & {"vmx", "svm"})


def choose_accel(requested: str, local: bool) -> str:
    """``kvm`` or ``tcg`` for a requested ``auto``/``kvm``/``tcg``; warns once per process on a fallback.

    Args:
        requested: The configured accelerator.
        local: The libvirt host is this machine (only then can KVM be probed here).
    """
    if requested not in ("auto", "kvm", "tcg"):
        raise ValueError(f"accel must be auto, kvm or tcg, not {requested!r}")
    if requested != "auto":
        return requested
    if not local or kvm_usable():
        return "kvm"
    warn_once(
        "tcg",
        "KVM is not usable here (no /dev/kvm access or no vmx/svm CPU flag): VMs run under TCG, ~10x slower.",
    )
    return "tcg"


def warn_once(key: str, message: str) -> None:
    """A RuntimeWarning the first time ``key`` is seen in this process."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (QEMU binds it moments later; a lost race fails the start)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
