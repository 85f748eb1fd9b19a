"""The proxy's policy: public addresses only, never the host's own, names only as the allowlist admits."""

from __future__ import annotations

import ipaddress
import re

import pytest
from osworld_mcp_env.network import NetworkConfig, NetworkMode
from osworld_mcp_env.network.policy import Refused, Target, check_address, decide, host_addresses

PUBLIC = "93.184.215.14"
OPEN = NetworkConfig(mode=NetworkMode.INTERNET)


def resolver(table):
    return lambda name, port: table.get(name, [])


def no_local():
    return set()


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "127.1.2.3", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1",
        "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    ],
)  # fmt: skip
def test_every_address_that_is_not_public_is_refused(address):
    with pytest.raises(Refused, match="not a public address"):
        check_address(address, set())


def test_a_public_address_of_the_host_itself_is_refused():
    check_address(PUBLIC, set())
    with pytest.raises(Refused, match="is an address of the host"):
        check_address(PUBLIC, {ipaddress.ip_address(PUBLIC)})
    with pytest.raises(Refused, match="is an address of the host"):
        check_address(f"::ffff:{PUBLIC}", {ipaddress.ip_address(PUBLIC)})


def test_the_hosts_addresses_are_read_from_the_kernel():
    local = host_addresses()
    assert ipaddress.ip_address("127.0.0.1") in local


def test_a_name_resolving_to_one_private_address_is_refused_whole():
    table = {"mixed.example": [PUBLIC, "10.0.0.7"], "good.example": [PUBLIC]}
    with pytest.raises(Refused, match=re.escape("10.0.0.7 is not a public address")):
        decide("mixed.example", 443, OPEN, resolver=resolver(table), local=no_local)
    assert decide("GOOD.example.", 443, OPEN, resolver=resolver(table), local=no_local) == [
        Target(PUBLIC, 443)
    ]


def test_localhost_names_and_unresolvable_names_are_refused():
    for name in ("localhost", "a.localhost"):
        with pytest.raises(Refused, match="is the host itself"):
            decide(name, 80, OPEN, resolver=resolver({name: [PUBLIC]}), local=no_local)
    with pytest.raises(Refused, match="does not resolve"):
        decide("nowhere.example", 80, OPEN, resolver=resolver({}), local=no_local)


def test_shorthand_ip_spellings_resolve_and_are_checked():
    # inet_aton reads "2130706433" and "127.1" as 127.0.0.1: the host's resolver must not open that door.
    for spelling in ("2130706433", "127.1", "0x7f000001"):
        with pytest.raises(Refused):
            decide(spelling, 80, OPEN, local=no_local)


def test_mapped_names_go_where_the_operator_said_whatever_the_address():
    config = NetworkConfig(mode=NetworkMode.INTERNET, hosts={"site.test": "127.0.0.1:8080", "b.test": "::1"})
    assert decide("site.test", 443, config, local=no_local) == [Target("127.0.0.1", 8080)]
    assert decide("b.test", 81, config, local=no_local) == [Target("::1", 81)]
    with pytest.raises(Refused, match=re.escape("127.0.0.1 is not a public address")):
        decide("127.0.0.1", 8080, config, local=no_local)  # the mapping is for the name, not the address


def test_the_allowlist_admits_names_and_their_subdomains_only():
    config = NetworkConfig(mode=NetworkMode.INTERNET, allow=("*.example.com", "exact.test"))
    table = {
        n: [PUBLIC]
        for n in ("example.com", "a.b.example.com", "exact.test", "badexample.com", "x.exact.test")
    }
    for name in ("example.com", "a.b.example.com", "exact.test"):
        assert decide(name, 443, config, resolver=resolver(table), local=no_local) == [Target(PUBLIC, 443)]
    for name in ("badexample.com", "x.exact.test"):
        with pytest.raises(Refused, match="not on the allowlist"):
            decide(name, 443, config, resolver=resolver(table), local=no_local)
    with pytest.raises(Refused, match="only the allowed names"):
        decide(PUBLIC, 443, config, resolver=resolver(table), local=no_local)


def test_with_an_upstream_a_name_the_host_cannot_resolve_goes_to_it_by_name():
    config = NetworkConfig(mode=NetworkMode.INTERNET, proxy_url="http://10.0.0.2:3128")
    assert decide("far.example", 443, config, resolver=resolver({}), local=no_local) == [
        Target("far.example", 443)
    ]
    with pytest.raises(Refused):
        decide("10.0.0.2", 3128, config, local=no_local)  # the upstream's address is no destination
