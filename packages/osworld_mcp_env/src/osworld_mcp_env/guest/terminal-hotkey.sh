#!/bin/sh
# Ctrl+Alt+T, as Ubuntu binds it (OSWorld's tasks press it to open a terminal).
# Openbox runs this as the infrastructure uid, which must never own a shell the
# agent types into; so it only asks the guest server, over its socket, to start
# the terminal the way /setup/launch starts any app: as the desktop user, in the
# user's home. The token goes to curl on stdin, never in argv (the user's `ps` sees argv).
token=${OSWORLD_GUEST_TOKEN_FILE:-}
{
  if [ -n "$token" ] && [ -r "$token" ]; then
    printf 'Authorization: Bearer '
    cat "$token"
    echo
  fi
} | exec curl --silent --fail --max-time 30 --unix-socket "$OSWORLD_CTL/guest.sock" \
  -H @- -H 'Content-Type: application/json' -d '{"command": ["xfce4-terminal"]}' \
  http://guest/setup/launch -o /dev/null
