"""LibvirtDesktopConfig checks its settings before any VM is defined (no libvirt needed)."""

from pathlib import Path

import pytest
from osworld_mcp_env.backends.libvirt.desktop import LibvirtDesktopConfig


def test_paths_from_a_text_config_become_paths():
    # backend_options read from TOML or JSON name paths as strings.
    config = LibvirtDesktopConfig(image_dir="/images/x", work_dir="/tmp/vms")  # type: ignore[arg-type]
    assert config.image_dir == Path("/images/x") and config.work_dir == Path("/tmp/vms")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"reset_mode": "reboot"}, "reset_mode"),
        ({"guest_api": "vnc"}, "guest_api"),
        ({"disk_image": Path("/images/Ubuntu.qcow2")}, "guest_api='osworld'"),
    ],
)
def test_settings_that_cannot_work_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        LibvirtDesktopConfig(**options)
