"""What network one desktop gets: loopback only (the default) or the web through the host's proxy.

Internet mode does not give the sandbox an interface. Its network namespace stays
loopback only; what leaves it goes through one door the infrastructure owns: a
relay on the sandbox's ``127.0.0.1:18888`` (the port of the tinyproxy OSWorld runs
inside its VM for ``proxy: true`` tasks) that hands each connection, over a Unix
socket in the control directory, to a proxy process on the host
(:mod:`osworld_mcp_env.network.proxy`). That proxy decides where a connection may
go (:mod:`osworld_mcp_env.network.policy`), so no process of the desktop user can
reach an address the policy refuses, whatever it sends.
"""

from __future__ import annotations

import enum
import ipaddress
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# OSWorld's in-VM tinyproxy listens here; its Chrome launches name it (--proxy-server).
RELAY_PORT = 18888
HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,62}[a-z0-9_])?)*$"
)


class NetworkMode(enum.StrEnum):
    """How much network a desktop gets."""

    LOOPBACK = "loopback"
    INTERNET = "internet"


@dataclass(frozen=True)
class Address:
    """Where a mapped host name goes: an IP address and optionally a fixed port."""

    ip: str
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> Address:
        """``"10.0.0.5"``, ``"10.0.0.5:8080"``, ``"::1"`` or ``"[::1]:8080"``.

        Raises:
            ValueError: Not an IP address with an optional port in 1..65535.
        """
        host, port = text, None
        match = re.fullmatch(r"\[([^\]]+)\]:(\d+)|([^:\[\]]+):(\d+)", text)
        if match:
            host = match.group(1) or match.group(3)
            port = int(match.group(2) or match.group(4))
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"hosts: {text!r} is not an IP address with an optional :port.") from None
        if port is not None and not 1 <= port <= 65535:
            raise ValueError(f"hosts: the port of {text!r} must be in 1..65535.")
        return cls(str(ip), port)


@dataclass(frozen=True)
class NetworkConfig:
    """The network of one desktop (``gym.make(..., network=...)``).

    Attributes:
        mode: ``loopback`` (default: the sandbox reaches nothing outside itself) or
            ``internet`` (outbound TCP through the host's proxy, see the module docstring).
        allow: Host names the desktop may reach; ``*.example.com`` also allows every
            name under it. Empty: every host whose addresses are public. IP literals
            are never matched by names.
        hosts: Names the proxy resolves itself, to ``"ip"`` or ``"ip:port"``: a local
            web server standing for a website (tests, mirrors). They are allowed
            whatever the address, so this is the one way to hand the desktop a
            private or loopback address: the operator's choice, never the agent's.
        proxy_url: An upstream HTTP proxy (``http://[user:pass@]host:port``) every
            connection goes through, as OSWorld routes its ``proxy: true`` tasks
            through a proxy pool. Names the host cannot resolve are passed to it.
        relay_port: The sandbox's loopback port apps send their requests to.
        connect_timeout_s: Deadline of one outbound connect (and the upstream's reply).
        max_connections: Connections open at once; more are answered 503.
    """

    mode: NetworkMode = NetworkMode.LOOPBACK
    allow: tuple[str, ...] = ()
    hosts: Mapping[str, str] = field(default_factory=dict)
    proxy_url: str | None = None
    relay_port: int = RELAY_PORT
    connect_timeout_s: float = 10.0
    max_connections: int = 256

    def __post_init__(self) -> None:
        try:
            mode = NetworkMode(self.mode)
        except ValueError:
            known = ", ".join(repr(m.value) for m in NetworkMode)
            raise ValueError(f"network mode must be one of {known}, got {self.mode!r}.") from None
        object.__setattr__(self, "mode", mode)
        if isinstance(self.allow, str):
            raise ValueError(f"allow must be a list of host names, got the string {self.allow!r}.")
        object.__setattr__(self, "allow", tuple(_check_pattern(p) for p in self.allow))
        if not isinstance(self.hosts, Mapping):
            raise ValueError(f"hosts must map names to addresses, got {type(self.hosts).__name__}.")
        for name, address in self.hosts.items():
            _check_name(str(name), "hosts")
            Address.parse(str(address))
        object.__setattr__(self, "hosts", {str(k).lower(): str(v) for k, v in self.hosts.items()})
        if self.proxy_url is not None:
            upstream_parts(self.proxy_url)
        if mode is NetworkMode.LOOPBACK and (self.allow or self.hosts or self.proxy_url):
            raise ValueError(
                "allow, hosts and proxy_url need outbound access: set mode='internet' "
                "(network={'mode': 'internet', ...}); the loopback desktop reaches nothing."
            )
        if not 1 <= self.relay_port <= 65535:
            raise ValueError(f"relay_port must be in 1..65535, got {self.relay_port}.")
        if not self.connect_timeout_s > 0:
            raise ValueError(f"connect_timeout_s must be > 0, got {self.connect_timeout_s}.")
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {self.max_connections}.")

    @classmethod
    def parse(cls, value: NetworkConfig | str | Mapping[str, Any] | None) -> NetworkConfig:
        """The config from what ``gym.make`` took: a mode name, a mapping of fields, or a config.

        Raises:
            ValueError: An unknown mode or field, or a bad value (the message names it).
        """
        if value is None:
            return cls()
        if isinstance(value, NetworkConfig):
            return value
        if isinstance(value, str):
            return cls(mode=value)  # type: ignore[arg-type]  # __post_init__ checks the name
        if isinstance(value, Mapping):
            known = set(cls.__dataclass_fields__)
            unknown = sorted(set(value) - known)
            if unknown:
                raise ValueError(f"Unknown network option(s) {unknown}; known: {sorted(known)}.")
            return cls(**value)
        raise ValueError(
            "network must be 'loopback', 'internet', a mapping or a NetworkConfig, "
            f"got {type(value).__name__}."
        )

    @property
    def internet(self) -> bool:
        """True when the desktop gets outbound access."""
        return self.mode is NetworkMode.INTERNET

    def session_env(self) -> dict[str, str]:
        """Proxy variables for the desktop's apps (curl, Python, Chromium read them); empty in loopback mode.

        Local addresses bypass the proxy: the apps' own ports (DevTools, VLC's HTTP
        interface, the office) live on the sandbox's loopback.
        """
        if not self.internet:
            return {}
        url = f"http://127.0.0.1:{self.relay_port}"
        local = "localhost,127.0.0.1,::1"
        return {
            "http_proxy": url,
            "https_proxy": url,
            "HTTP_PROXY": url,
            "HTTPS_PROXY": url,
            "no_proxy": local,
            "NO_PROXY": local,
        }

    def to_json(self) -> str:
        """The fields as JSON, for the proxy process."""
        return json.dumps(asdict(self))


def upstream_parts(url: str) -> tuple[str, int, str | None]:
    """(host, port, ``user:password`` or None) of an upstream proxy URL.

    Raises:
        ValueError: Not ``http://[user:pass@]host:port`` (HTTPS-to-proxy is not spoken).
    """
    parsed = urllib.parse.urlsplit(url)
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme != "http" or not parsed.hostname or port is None or parsed.path not in ("", "/"):
        raise ValueError(f"proxy_url must look like http://[user:pass@]host:port, got {_redacted(url)!r}.")
    credentials = None
    if parsed.username is not None:
        credentials = f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password or '')}"
    return parsed.hostname, port, credentials


def _redacted(url: str) -> str:
    """``url`` with any password replaced: error messages end up in logs."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)


def _check_name(name: str, what: str) -> str:
    if not HOST_NAME.match(name.lower()):
        raise ValueError(f"{what}: {name!r} is not a host name.")
    return name.lower()


def _check_pattern(pattern: str) -> str:
    """An allow entry: a host name, or ``*.`` followed by one."""
    name = pattern[2:] if pattern.startswith("*.") else pattern
    _check_name(name, "allow")
    return pattern.lower()
