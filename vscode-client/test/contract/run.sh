#!/usr/bin/env bash
# Contract tests of the Gatehouse protocol (vscode-jsonrpc against the real Python server).
# Env: GATEHOUSE_PYTHON, GATEHOUSE_ROOT, GATEHOUSE_CONTRACT_CONCURRENCY, GATEHOUSE_CONTRACT_VERBOSE
# (see the header of protocol.test.mjs).
set -euo pipefail
cd "$(dirname "$0")"
[ -d node_modules/vscode-jsonrpc ] || npm ci --no-audit --no-fund
exec node --test protocol.test.mjs golden.test.mjs
