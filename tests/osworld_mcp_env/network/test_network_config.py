"""The network option: what gym.make accepts, what it refuses with a clear message, what apps get."""

from __future__ import annotations

import json
import re

import pytest
from osworld_mcp_env.backends import make_desktop
from osworld_mcp_env.env.core import EnvConfig
from osworld_mcp_env.errors import DesktopStartError
from osworld_mcp_env.network import RELAY_PORT, NetworkConfig, NetworkMode
from osworld_mcp_env.network.config import Address, upstream_parts


def test_loopback_is_the_default_and_gives_apps_no_proxy():
    assert EnvConfig().network == NetworkConfig()
    assert NetworkConfig().mode is NetworkMode.LOOPBACK
    assert NetworkConfig().session_env() == {}
    assert NetworkConfig.parse(None) == NetworkConfig.parse("loopback") == NetworkConfig()


def test_internet_by_name_mapping_or_config_is_one_config():
    by_name = EnvConfig(network="internet").network
    assert by_name == NetworkConfig(mode=NetworkMode.INTERNET)
    mapped = EnvConfig(network={"mode": "internet", "hosts": {"Site.Test": "127.0.0.1:8080"}}).network
    assert isinstance(mapped, NetworkConfig)
    assert mapped.hosts == {"site.test": "127.0.0.1:8080"}
    assert NetworkConfig.parse(mapped) is mapped


def test_internet_apps_get_the_relay_as_their_proxy_and_local_addresses_bypass_it():
    env = NetworkConfig(mode=NetworkMode.INTERNET).session_env()
    url = f"http://127.0.0.1:{RELAY_PORT}"
    assert RELAY_PORT == 18888  # where OSWorld's in-VM tinyproxy listens
    assert env["http_proxy"] == env["https_proxy"] == env["HTTP_PROXY"] == env["HTTPS_PROXY"] == url
    assert env["no_proxy"] == env["NO_PROXY"] == "localhost,127.0.0.1,::1"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("wifi", "network mode must be one of 'loopback', 'internet', got 'wifi'."),
        ({"mode": "internet", "proxy": "x"}, "Unknown network option(s) ['proxy']"),
        ({"mode": "internet", "allow": "example.com"}, "allow must be a list of host names"),
        ({"mode": "internet", "allow": ["exa mple.com"]}, "allow: 'exa mple.com' is not a host name."),
        ({"mode": "internet", "hosts": {"a.test": "nowhere"}}, "hosts: 'nowhere' is not an IP address"),
        ({"mode": "internet", "hosts": {"a.test": "10.0.0.1:0"}}, "hosts: the port of '10.0.0.1:0'"),
        ({"mode": "internet", "hosts": ["a.test"]}, "hosts must map names to addresses, got list."),
        ({"mode": "internet", "proxy_url": "socks5://u:secret@p:1080"}, "proxy_url must look like http://"),
        ({"mode": "internet", "proxy_url": "http://proxy.example"}, "proxy_url must look like http://"),
        ({"proxy_url": "http://proxy.example:3128"}, "allow, hosts and proxy_url need outbound access"),
        ({"mode": "internet", "relay_port": 0}, "relay_port must be in 1..65535, got 0."),
        ({"mode": "internet", "max_connections": 0}, "max_connections must be >= 1, got 0."),
        (5, "network must be 'loopback', 'internet', a mapping or a NetworkConfig, got int."),
    ],
)
def test_bad_network_options_raise_at_construction_with_the_fix(value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        EnvConfig(network=value)


def test_an_upstream_password_never_reaches_an_error_message():
    with pytest.raises(ValueError) as raised:
        NetworkConfig(mode=NetworkMode.INTERNET, proxy_url="socks5://user:hunter2@proxy:1080")
    assert "hunter2" not in str(raised.value) and "user:***@" in str(raised.value)


def test_upstream_and_address_parsing():
    assert upstream_parts("http://proxy.example:3128") == ("proxy.example", 3128, None)
    assert upstream_parts("http://u%40x:p%3Aw@10.0.0.2:8080/") == ("10.0.0.2", 8080, "u@x:p:w")
    assert Address.parse("10.0.0.5") == Address("10.0.0.5", None)
    assert Address.parse("10.0.0.5:81") == Address("10.0.0.5", 81)
    assert Address.parse("[::1]:81") == Address("::1", 81)
    assert Address.parse("::1") == Address("::1", None)


def test_the_config_round_trips_through_the_proxy_processes_json():
    config = NetworkConfig(
        mode=NetworkMode.INTERNET, allow=("*.example.com",), hosts={"a.test": "127.0.0.1:1"}, proxy_url=None
    )
    fields = json.loads(config.to_json())
    assert NetworkConfig(**{**fields, "allow": tuple(fields["allow"])}) == config


def test_the_libvirt_backend_refuses_internet_mode_with_the_fix():
    with pytest.raises(DesktopStartError, match="network='internet' is the local backend's"):
        make_desktop("libvirt", screen_width=640, screen_height=480, network=NetworkConfig(mode="internet"))
