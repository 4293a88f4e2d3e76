#!/usr/bin/env bash
# Browser tests drive Debian's chromium through Playwright (never a downloaded browser) and check
# every page with axe-core (an npm package, package.json; no browser download).
# Install both when missing and we may (root with apt-get; npm); otherwise browser tests skip.
set -u
cd "$(dirname "$0")/.."
if [ ! -f node_modules/axe-core/axe.min.js ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "Installing axe-core for the accessibility checks..."
    npm ci --no-audit --no-fund --ignore-scripts >/tmp/axe-install.log 2>&1 \
      || echo "axe-core install failed (see /tmp/axe-install.log); accessibility checks will skip"
  elif [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm) >/tmp/npm-install.log 2>&1 \
      && npm ci --no-audit --no-fund --ignore-scripts >/tmp/axe-install.log 2>&1 \
      || echo "npm/axe-core install failed; accessibility checks will skip"
  else
    echo "npm not found; accessibility checks will skip"
  fi
fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/tmp/chromium-install.log 2>&1 \
    || { echo "chromium install failed (see /tmp/chromium-install.log); browser tests will skip"; exit 0; }
else
  echo "chromium not found and cannot be installed here; browser tests will skip"
fi
exit 0
