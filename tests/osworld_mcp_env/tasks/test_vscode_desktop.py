"""VS Code on the embedded desktop: code-server's workbench as OSWorld's VS Code tasks use it.

``code`` (the guest's ``bin/code``) starts code-server as the desktop user on the
sandbox's loopback and shows it in a Chromium app window titled like VS Code's; user data
goes where VS Code keeps it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from polling import wait_until

CODE_SERVER = Path("/usr/local/lib/code-server/node_modules/code-server/out/node/entry.js")

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        not CODE_SERVER.is_file(), reason="code-server is not installed (tools/install_code_server.sh)"
    ),
]


def _vs_code_window(desktop, title_part: str = "Visual Studio Code"):
    return next(
        (w for w in desktop.windows() if title_part in w.title and w.title.endswith("Visual Studio Code")),
        None,
    )


def test_code_opens_a_folder_as_the_desktop_user_with_vs_codes_paths(desktop):
    desktop.execute(["mkdir", "-p", "/home/user/proj"])
    desktop.launch(["code", "/home/user/proj"])
    window = wait_until(lambda: _vs_code_window(desktop, "proj"), 180, "VS Code's window on proj")
    assert window.title.endswith("proj - Visual Studio Code")
    owners = desktop.execute("ps -o user= -C node,chromium", shell=True).output.split()
    assert owners and set(owners) == {"user"}
    listed = desktop.execute(["code", "--list-extensions"])
    assert listed.returncode == 0, listed.error
    assert desktop.execute(["test", "-d", "/home/user/.config/Code/User"]).returncode == 0
    assert desktop.execute(["test", "-d", "/home/user/.vscode/extensions"]).returncode == 0
