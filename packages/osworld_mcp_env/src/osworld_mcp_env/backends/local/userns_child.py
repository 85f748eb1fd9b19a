"""The first process of a sandbox: a user namespace whose map the host writes, then ``exec``.

Run by :func:`osworld_mcp_env.backends.local.userns.spawn_in_user_namespace` as
``python -I -S userns_child.py READY_FD GO_FD COMMAND...``. A process can only map
one uid into a namespace it creates itself; a second host uid (the desktop user,
apart from the infrastructure) needs a privileged process *outside* to write
``uid_map``. So this child unshares, tells the parent, waits for the maps, becomes
the namespace's root and executes the command (bubblewrap), all in one process so
that ``--die-with-parent`` still refers to the host's spawner thread.

Standard library only, no site packages: it runs before anything else is set up.
"""

import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000


def main() -> int:
    """Unshares, waits for the host to write the maps, becomes namespace root, execs."""
    ready_fd, go_fd, command = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER) != 0:
        errno = ctypes.get_errno()
        sys.stderr.write(f"userns_child: unshare(CLONE_NEWUSER) failed: {os.strerror(errno)}\n")
        return 111
    os.write(ready_fd, b"1")
    os.close(ready_fd)
    if os.read(go_fd, 1) != b"1":
        return 112  # the host gave up (its side failed or it died)
    os.close(go_fd)
    os.setgroups([])
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    os.execvp(command[0], command)
    return 113  # not reached


if __name__ == "__main__":
    sys.exit(main())
