"""libvirt_env_fns: members spread over the URIs, each with its own uri, and factories that pickle."""

import pickle

import pytest
from osworld_mcp_env.backends.libvirt.hosts import libvirt_env_fns


def test_members_interleave_the_hosts_and_pickle():
    fns = libvirt_env_fns(["qemu:///system", "qemu+ssh://b/system"], 2, backend_options={"memory_mb": 1024})
    uris = [pickle.loads(pickle.dumps(f)).keywords["backend_options"]["uri"] for f in fns]
    assert uris == ["qemu:///system", "qemu+ssh://b/system"] * 2  # a group's first members on different hosts
    assert all(
        f.keywords["backend"] == "libvirt" and f.keywords["backend_options"]["memory_mb"] == 1024 for f in fns
    )


def test_a_uri_in_the_backend_options_is_refused():
    with pytest.raises(ValueError, match="uris"):
        libvirt_env_fns(["qemu:///system"], backend_options={"uri": "qemu:///session"})
