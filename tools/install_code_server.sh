#!/usr/bin/env bash
# Installs code-server (VS Code's own workbench served to a browser) from the npm registry
# alone into /usr/local/lib/code-server, under /usr, which the desktop sandbox binds
# read-only; the desktop's `code` command (osworld_mcp_env/guest/bin/code) runs it.
#
# Why by hand: `npm install code-server` runs install scripts that download prebuilt
# binaries from GitHub (@vscode/ripgrep's ripgrep, argon2's addon), which this machine
# family cannot reach. So the packages are installed with --ignore-scripts, ripgrep comes
# from Debian (apt's `ripgrep`) into the place @vscode/ripgrep's `rgPath` names, and every
# native addon is compiled here against the installed Node's headers (node-gyp from npm).
# Then the steps of code-server's own postinstall.sh (symlinks, the extensions' packages),
# and the product's display name set to VS Code's.
#
# code-server 4.99.4 (VS Code 1.99.3) is the newest release that runs on Node 20; 4.100 and
# later need Node 22+. Without Node 20 this prints why and installs nothing (the coverage
# report then gives "code-server is not installed" as the VS Code tasks' reason).
# Idempotent: an install whose marker names this version is left alone.
set -euo pipefail

VERSION=4.99.4
PREFIX=${CODE_SERVER_PREFIX:-/usr/local/lib/code-server}
MARKER="$PREFIX/.installed-$VERSION"

[ -f "$MARKER" ] && exit 0
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" != 20 ]; then
  echo "install_code_server: code-server $VERSION needs Node 20 (found: $(node --version 2>/dev/null || echo none)); VS Code tasks stay unsupported" >&2
  exit 0
fi
command -v rg >/dev/null || { echo "install_code_server: apt's ripgrep is missing" >&2; exit 1; }

work=$(mktemp -d "${PREFIX}.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export npm_config_nodedir=/usr          # Node's headers as installed, not a download
export npm_config_build_from_source=true
export npm_config_yes=true              # node-pty's script runs `npx node-gyp`
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

cd "$work"
npm install --ignore-scripts --omit=dev "code-server@$VERSION" >/dev/null
cs="$work/node_modules/code-server"
(cd "$work" && npm rebuild argon2 >/dev/null)
cd "$cs/lib/vscode"
npm install --ignore-scripts --omit=dev >/dev/null
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
npm rebuild >/dev/null
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
(cd extensions && npm install --omit=dev >/dev/null)
# Window titles end in the product's name, which the bundles carry inlined; OSWorld's
# setup activates the window named "Visual Studio Code".
grep -rlZ --include='*.js' 'nameShort:"code-server",nameLong:"code-server"' out \
  | xargs -0 sed -i 's/nameShort:"code-server",nameLong:"code-server"/nameShort:"Visual Studio Code",nameLong:"Visual Studio Code"/'

rm -rf "$PREFIX"
mv "$work" "$PREFIX"
trap - EXIT
chmod -R a+rX "$PREFIX"
touch "$MARKER"
echo "install_code_server: code-server $VERSION in $PREFIX"
