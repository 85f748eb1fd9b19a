#!/bin/bash
# The desktop session inside one sandbox (or VM): X, session bus, window manager,
# the guest control server and the MCP tool host. Any core process dying ends the
# session, which ends the sandbox: a half-alive desktop is worse than a dead one.
#
# Environment (set by the backend): DISPLAY, XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS,
# OSWORLD_SCREEN (WxHxD), OSWORLD_CTL (control dir), OSWORLD_PYTHON, OSWORLD_MCP (0/1).
set -u
log="$OSWORLD_CTL/log"
mkdir -p "$log"

wait_for_socket() {  # path, tries of 10 ms
  local i
  for ((i = 0; i < $2; i++)); do [ -S "$1" ] && return 0; sleep 0.01; done
  echo "session: $1 did not appear" >&2
  exit 1
}

fbdir=()
# With a frame directory bound in, Xvfb keeps its screen there and the host reads it directly.
[ -d /run/fb ] && fbdir=(-fbdir /run/fb)
Xvfb "$DISPLAY" -screen 0 "$OSWORLD_SCREEN" -nolisten tcp -noreset "${fbdir[@]}" 2>"$log/xvfb.log" &
wait_for_socket "/tmp/.X11-unix/X${DISPLAY#:}" 1000
dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --nofork --nopidfile --syslog-only \
  2>"$log/dbus.log" &
wait_for_socket "${DBUS_SESSION_BUS_ADDRESS#unix:path=}" 1000
openbox --sm-disable 2>"$log/openbox.log" &
"$OSWORLD_PYTHON" -m osworld_mcp_env.guest.server --unix "$OSWORLD_CTL/guest.sock" 2>"$log/guest.log" &
if [ "${OSWORLD_MCP:-0}" = 1 ]; then
  "$OSWORLD_PYTHON" -m osworld_mcp_env.mcp_servers.cli all --uds "$OSWORLD_CTL/mcp.sock" 2>"$log/mcp.log" &
fi
wait -n
exit 1
