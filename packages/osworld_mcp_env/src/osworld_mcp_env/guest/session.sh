#!/bin/bash
# The desktop session inside one sandbox, run as the namespace's root: the
# infrastructure uid, which the desktop user (uid 1000) does not share. X, the
# window manager, the guest control server and the MCP tool host run here; the
# guest server starts the user's session bus and every process of the user.
# Any core process dying ends the session, which ends the sandbox: a half-alive
# desktop is worse than a dead one.
#
# Environment (set by the backend): DISPLAY, XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS,
# OSWORLD_SCREEN (WxHxD), OSWORLD_CTL (control dir), OSWORLD_PYTHON, OSWORLD_MCP (0/1),
# OSWORLD_DESKTOP_UID, OSWORLD_MAX_TASKS, OSWORLD_MAX_USERNS, OSWORLD_NET_RELAY (relay port,
# internet mode only) and the guest's settings.
set -u
umask 077  # the screen file, logs and sockets are the infrastructure's alone
log="$OSWORLD_CTL/log"
mkdir -p "$log"

# Bounds that hold with or without host cgroups: tasks per uid, nested user namespaces.
ulimit -u "${OSWORLD_MAX_TASKS:-4096}"
echo "${OSWORLD_MAX_USERNS:-32}" >/proc/sys/user/max_user_namespaces 2>/dev/null

wait_for_socket() {  # path, tries of 10 ms
  local i
  for ((i = 0; i < $2; i++)); do [ -S "$1" ] && return 0; sleep 0.01; done
  echo "session: $1 did not appear" >&2
  exit 1
}

# Processes that need no capability inside the namespace get none.
no_caps=(setpriv --bounding-set=-all --inh-caps=-all --no-new-privs --)
# GTK apps draw in their own memory and send X finished pixels. By default GTK backs a
# window with an X pixmap, and LibreOffice's software renderer (gtk3) reads it back over
# the X socket for each repaint: 3.3 GB in 5 s of typing into Writer, most of the 6-7 ms
# it spent per key. The pixels are the same up to antialiasing (<= 0.03 % of a frame).
export GDK_RENDERING=image
user_home=$HOME
export HOME=/root  # the infrastructure never reads or writes the user's home by accident

if [ -n "${OSWORLD_NET_RELAY:-}" ]; then
  # Internet mode: the sandbox's one way out, a relay from its loopback to the host proxy's
  # socket (osworld_mcp_env.network). Started first, so its start overlaps X's; the guest
  # server (and so any process of the user, who could take its port) waits for it below.
  rm -f "$OSWORLD_CTL/relay.ready"
  "${no_caps[@]}" "$OSWORLD_PYTHON" -m osworld_mcp_env.guest.proxy_relay --port "$OSWORLD_NET_RELAY" \
    --socket "$OSWORLD_CTL/net-proxy.sock" --ready "$OSWORLD_CTL/relay.ready" 2>"$log/relay.log" &
fi
fbdir=()
# With a frame directory bound in, Xvfb keeps its screen there and the host reads it directly.
[ -d /run/fb ] && fbdir=(-fbdir /run/fb)
"${no_caps[@]}" Xvfb "$DISPLAY" -screen 0 "$OSWORLD_SCREEN" -nolisten tcp -noreset "${fbdir[@]}" \
  2>"$log/xvfb.log" &
wait_for_socket "/tmp/.X11-unix/X${DISPLAY#:}" 1000
# Openbox runs as the infrastructure uid: its stock configuration starts programs from the
# root menu and from key bindings, which the agent's clicks and keys reach. Only a sanitized
# copy is used (window management only, see openbox_config.py), plus Ubuntu's Ctrl+Alt+T
# terminal shortcut that OSWorld's tasks press (terminal-hotkey.sh starts it as the user).
# No configuration, no window manager: the stock file must never be the fallback.
"$OSWORLD_PYTHON" -m osworld_mcp_env.guest.openbox_config /etc/xdg/openbox/rc.xml "$OSWORLD_CTL" \
  "/bin/sh $(dirname "$0")/terminal-hotkey.sh" 2>"$log/openbox-config.log" || exit 1
openbox_rc="$OSWORLD_CTL/openbox-rc.xml"
"${no_caps[@]}" openbox --sm-disable --config-file "$openbox_rc" 2>"$log/openbox.log" &
if [ "${OSWORLD_MCP:-0}" = 1 ]; then
  HOME=$user_home "$OSWORLD_PYTHON" -m osworld_mcp_env.mcp_servers.cli all --uds "$OSWORLD_CTL/mcp.sock" \
    --desktop-uid "${OSWORLD_DESKTOP_UID:-1000}" 2>"$log/mcp.log" &
fi
if [ -n "${OSWORLD_NET_RELAY:-}" ]; then
  for ((i = 0; i < 1000; i++)); do [ -e "$OSWORLD_CTL/relay.ready" ] && break; sleep 0.01; done
  [ -e "$OSWORLD_CTL/relay.ready" ] || { echo "session: the network relay did not start" >&2; exit 1; }
fi
HOME=$user_home "$OSWORLD_PYTHON" -m osworld_mcp_env.guest.server --unix "$OSWORLD_CTL/guest.sock" \
  2>"$log/guest.log" &
wait -n
exit 1
