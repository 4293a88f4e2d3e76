#!/usr/bin/env bash
# Browser tests drive Debian's chromium through Playwright (never a downloaded browser).
# Install it when missing and we may (root with apt-get); otherwise browser tests skip.
set -u
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/tmp/chromium-install.log 2>&1 \
    || { echo "chromium install failed (see /tmp/chromium-install.log); browser tests will skip"; exit 0; }
else
  echo "chromium not found and cannot be installed here; browser tests will skip"
fi
exit 0
