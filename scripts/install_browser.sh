#!/usr/bin/env bash
# Installs what the browser test (tests/web/, marker `browser`) needs:
#   - Debian's chromium (+ chromium-driver) from apt, when /usr/bin/chromium is missing;
#   - the playwright Python package pinned in requirements/dev.txt.
# Playwright's wheel bundles its own driver (node), but never its browsers:
# the tests launch /usr/bin/chromium, so `playwright install` is not needed.
# Best effort: without root/sudo or apt the browser test is skipped, not failed
# (the Makefile calls this with `|| true`).
# Usage: bash scripts/install_browser.sh [PIP]   (default .venv/bin/pip)
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${1:-.venv/bin/pip}"

if [ ! -x /usr/bin/chromium ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install_browser: no apt-get; install Chromium yourself to run the browser test" >&2
    else
        SUDO=""
        if [ "$(id -u)" -ne 0 ]; then
            if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
                SUDO="sudo -n"
            else
                echo "install_browser: not root and no passwordless sudo; skipping Chromium" >&2
                SUDO="skip"
            fi
        fi
        if [ "$SUDO" != "skip" ]; then
            $SUDO apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
                chromium chromium-driver fonts-dejavu-core
        fi
    fi
fi

# The pin lives in requirements/dev.txt; install just that line.
PLAYWRIGHT_PIN="$(grep -E '^playwright==' requirements/dev.txt)"
"$PIP" install -q --no-warn-conflicts "$PLAYWRIGHT_PIN"      # scripts/check_deps.py checks after
