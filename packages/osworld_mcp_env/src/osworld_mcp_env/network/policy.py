"""Where a desktop's outbound connection may go: the one decision the proxy makes.

The proxy runs on the host, so every address it can reach, the desktop could reach
through it: the host's loopback (other desktops' forwarded VM ports, the env's own
servers, anything a user runs there), its other addresses, the LAN behind it. The
policy therefore refuses every address that is not globally routable and every
address of the host itself, checks the address it will connect to (never a name
resolved twice, which DNS rebinding would turn into a different answer), and
resolves only names the allowlist admits.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.network.config import Address, NetworkConfig

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


class Refused(Exception):
    """The policy does not let this connection leave; the message says why (sent to the client)."""


@dataclass(frozen=True)
class Target:
    """Where to connect: an address the policy checked, or (through an upstream) a name it passes on."""

    host: str
    port: int


def resolve(name: str, port: int) -> list[str]:
    """The host's resolver: every address of ``name`` (empty when it has none)."""
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return []
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def host_addresses(proc: Path = Path("/proc/net")) -> set[IPAddress]:
    """Every address of the host's interfaces (IPv4 from the local routing table, IPv6 from if_inet6)."""
    found: set[IPAddress] = set()
    last = None
    try:
        for line in (proc / "fib_trie").read_text().splitlines():
            text = line.strip()
            if text.startswith(("|--", "+--")):
                last = text.split()[-1]
            elif "host LOCAL" in text and last:
                found.add(ipaddress.ip_address(last))
    except (OSError, ValueError):
        pass
    try:
        for line in (proc / "if_inet6").read_text().splitlines():
            digits = line.split()[0]
            found.add(ipaddress.IPv6Address(int(digits, 16)))
    except (OSError, ValueError, IndexError):
        pass
    return found


def _plain(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address as the IPv4 address it reaches."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def check_address(address: str, local: Iterable[IPAddress]) -> None:
    """Raises :class:`Refused` unless ``address`` is public and not the host's own."""
    ip = _plain(ipaddress.ip_address(address))
    if not ip.is_global or ip.is_multicast:  # ipaddress counts global multicast scopes as global
        raise Refused(f"{ip} is not a public address")
    if ip in {_plain(a) for a in local}:
        raise Refused(f"{ip} is an address of the host")


def allowed_name(name: str, config: NetworkConfig) -> bool:
    """True when the allowlist admits ``name`` (an empty allowlist admits every name)."""
    if not config.allow:
        return True
    for pattern in config.allow:
        if pattern.startswith("*."):
            if name == pattern[2:] or name.endswith(pattern[1:]):
                return True
        elif name == pattern:
            return True
    return False


def decide(
    host: str,
    port: int,
    config: NetworkConfig,
    *,
    resolver: Resolver = resolve,
    local: Callable[[], set[IPAddress]] = host_addresses,
) -> list[Target]:
    """The targets to try, in order, for a request to ``host:port``.

    Args:
        host: The name or IP literal the client asked for.
        port: Its port.
        config: The desktop's network.
        resolver: Name -> addresses (the host's resolver).
        local: The host's own addresses, read per request (interfaces change).

    Raises:
        Refused: Nothing of this request may leave.
    """
    if not 1 <= port <= 65535:
        raise Refused(f"port {port} is out of range")
    name = host.strip("[]").lower().rstrip(".")
    mapped = config.hosts.get(name)
    if mapped is not None:
        chosen = Address.parse(mapped)
        return [Target(chosen.ip, chosen.port or port)]
    try:
        ipaddress.ip_address(name)
    except ValueError:
        literal = False
    else:
        literal = True
    if literal:
        if config.allow:
            raise Refused(f"{name} is an address; only the allowed names may be reached")
        check_address(name, local())
        return [Target(name, port)]
    if not allowed_name(name, config):
        raise Refused(f"{name} is not on the allowlist")
    if name == "localhost" or name.endswith(".localhost"):
        raise Refused(f"{name} is the host itself")
    addresses = resolver(name, port)
    if not addresses:
        if config.proxy_url:  # the upstream resolves what the host cannot
            return [Target(name, port)]
        raise Refused(f"{name} does not resolve")
    own = local()
    for address in addresses:
        check_address(address, own)  # one private answer refuses the name: no retrying into the LAN
    return [Target(address, port) for address in addresses]
