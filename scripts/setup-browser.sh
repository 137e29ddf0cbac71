#!/usr/bin/env bash
# Installs Chromium (Debian's `chromium` package) for the HTML report's browser tests
# (tests/suite/html_report.rs), unless a `chromium` is already on PATH. Idempotent, so CI can
# call it every run. Needs apt-get, as root or through sudo.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    echo "setup-browser: $(command -v chromium) is installed"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-browser: no chromium on PATH and no apt-get to install it; install Chromium" \
        "(or set AGENTPROXY_SKIP_BROWSER=1 to skip the browser tests)" >&2
    exit 1
fi
sudo=()
if [[ "$(id -u)" != 0 ]]; then
    sudo=(sudo)
fi
echo "setup-browser: installing chromium with apt-get"
"${sudo[@]}" apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium >/dev/null
echo "setup-browser: $(command -v chromium) is installed"
