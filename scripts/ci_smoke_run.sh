#!/usr/bin/env bash
# Start the product as `make run` does (embedded default), wait for the login page, stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${SMOKE_PORT:-8765}"
export VAR_DIR="$(mktemp -d)/var"
log="$(mktemp)"
PORT=$PORT setsid make run >"$log" 2>&1 &
pid=$!
cleanup() { kill -TERM -- -"$pid" 2>/dev/null || true; sleep 2; kill -KILL -- -"$pid" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 180); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/login/" || true)
  if [ "$code" = "200" ]; then
    echo "login page answered HTTP 200"
    grep -E "Open http|annotator|admin " "$log" | head -8
    exit 0
  fi
  sleep 1
done
echo "the product did not answer on port $PORT; log follows"; cat "$log"; exit 1
