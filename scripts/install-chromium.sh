#!/usr/bin/env bash
# Installs Debian's headless-capable chromium and its chromium-driver (WebDriver, which the review workbench's
# browser test drives through Selenium) for the browser tests (marker `browser`).
# Idempotent: does nothing when /usr/bin/chromium and /usr/bin/chromedriver already run; refreshes the apt lists only when
# chromium is not installable from the lists already on the machine. Prints the chromium path.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
CHROMEDRIVER=/usr/bin/chromedriver
if [ -x "$CHROMIUM" ] && "$CHROMIUM" --version >/dev/null 2>&1 && [ -x "$CHROMEDRIVER" ]; then
    echo "$CHROMIUM"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# Only `apt-get update` when the current package lists do not know chromium (fresh image, stale lists).
if ! apt-cache show chromium >/dev/null 2>&1; then
    $SUDO apt-get update -qq
fi
if ! $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; then
    # Lists can be stale (a package version gone from the mirror): refresh once and retry.
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi

"$CHROMIUM" --version >/dev/null
"$CHROMEDRIVER" --version >/dev/null
echo "$CHROMIUM"
