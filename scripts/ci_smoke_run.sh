#!/usr/bin/env bash
# Start the product as `make run` does (embedded default), wait for the login page, then stop it
# with SIGTERM as a process manager would: web server and worker must be gone within 10 s, with
# no traceback in the log. Also: a port in use is refused before any URL is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${SMOKE_PORT:-8765}"
export VAR_DIR="$(mktemp -d)/var"
log="$(mktemp)"
PORT=$PORT setsid make run >"$log" 2>&1 &
pid=$!
cleanup() { kill -KILL -- -"$pid" 2>/dev/null || true; }
trap cleanup EXIT
up=0
for _ in $(seq 180); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/login/" || true)
  if [ "$code" = "200" ]; then up=1; break; fi
  sleep 1
done
if [ "$up" != 1 ]; then echo "the product did not answer on port $PORT; log follows"; cat "$log"; exit 1; fi
echo "login page answered HTTP 200"
grep -E "Open http|annotator|admin " "$log" | head -8

# a second server on the same port: refused with a clear message, before any URL
second="$(mktemp)"
if .venv/bin/python manage.py serve --port "$PORT" --no-worker >"$second" 2>&1; then
  echo "a second server on port $PORT started"; cat "$second"; exit 1
fi
grep -q "already in use" "$second" && ! grep -q "Open http" "$second" || { echo "port-in-use message missing"; cat "$second"; exit 1; }
echo "port in use: $(grep -o 'port [0-9]* on [^;]* in use' "$second")"

# SIGTERM to the whole group (make, serve, worker): everything is gone within 10 s, no traceback
worker_pid=$(grep -o 'Celery worker started (pid [0-9]*' "$log" | grep -o '[0-9]*$' || true)
start=$(date +%s)
kill -TERM -- -"$pid"
for _ in $(seq 100); do
  alive=0
  kill -0 -- -"$pid" 2>/dev/null && alive=1
  if [ -n "$worker_pid" ] && kill -0 "$worker_pid" 2>/dev/null; then alive=1; fi
  [ "$alive" = 0 ] && break
  sleep 0.1
done
took=$(( $(date +%s) - start ))
if [ "$alive" = 1 ]; then echo "still running 10 s after SIGTERM; log follows"; tail -30 "$log"; exit 1; fi
if grep -q "Traceback" "$log"; then echo "traceback while stopping; log follows"; tail -40 "$log"; exit 1; fi
echo "stopped cleanly ${took} s after SIGTERM: $(grep -o 'Stopped the worker.*' "$log" || echo 'no worker')"
