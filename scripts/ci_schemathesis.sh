#!/usr/bin/env bash
# The API keeps its OpenAPI contract: schemathesis (--checks all) against the running product
# (gunicorn, DEBUG=0, PostgreSQL when DATABASE_URL is one) as each role and anonymously; any
# failure fails CI. Seed data: scripts/ci_api_seed.py. Budget: SCHEMATHESIS_EXAMPLES cases per
# operation in the examples and fuzzing phases (default 3): 25-90 s per identity on 2 loaded cores
# (load average 20), about 4.5 minutes for the five. An internal error of schemathesis itself
# (its "Runtime Error") is printed but does not fail the step; API failures and network errors do.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${SCHEMATHESIS_PORT:-8791}"
EXAMPLES="${SCHEMATHESIS_EXAMPLES:-3}"
PASSWORD="contract-check-$RANDOM$RANDOM"
work="$(mktemp -d)"
export VAR_DIR="$work/var" DEBUG=0 SECRET_KEY="contract-check-$RANDOM$RANDOM$RANDOM" SECURE_SSL_REDIRECT=0
export ALLOWED_HOSTS=127.0.0.1,localhost API_BASIC_AUTH=1 CELERY_TASK_ALWAYS_EAGER=0
# schemathesis sends wrong credentials on purpose (ignored_auth) and answers fast: keep the
# lockout and the answer rate limit out of its way (both have their own tests).
export LOGIN_MAX_FAILURES=1000000 ANSWER_RATE_LIMIT=100000/min
if [[ "${DATABASE_URL:-}" == postgres* ]]; then
  base="${DATABASE_URL%/*}"
  .venv/bin/python - "$base" <<'PY'
import sys, psycopg
with psycopg.connect(sys.argv[1] + "/postgres", autocommit=True) as conn:
    conn.execute("DROP DATABASE IF EXISTS api_contract WITH (FORCE)")
    conn.execute("CREATE DATABASE api_contract")
PY
  export DATABASE_URL="$base/api_contract"
else
  unset DATABASE_URL
fi
.venv/bin/python manage.py migrate -v 0
.venv/bin/python manage.py collectstatic --noinput -v 0
.venv/bin/python scripts/ci_api_seed.py "$PASSWORD"
.venv/bin/python manage.py spectacular --format openapi-json --file "$work/schema.json"

.venv/bin/gunicorn config.wsgi -b "127.0.0.1:$PORT" --workers 3 --timeout 60 --log-level warning >"$work/gunicorn.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 60); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/login/" && break; sleep 0.5; done

# Log in once per role through the login form: a session cookie and its CSRF token (Basic auth
# would hash the password, PBKDF2, on every request: seconds per request on a loaded machine).
session_headers() { .venv/bin/python scripts/ci_session.py "http://127.0.0.1:$PORT" "$1" "$PASSWORD"; }

status=0
for who in anonymous annotator verifier researcher admin; do
  auth=()
  if [ "$who" != anonymous ]; then
    while IFS= read -r line; do auth+=(-H "$line"); done < <(session_headers "$who")
  fi
  echo "-- schemathesis as $who"
  if ! .venv/bin/schemathesis run "$work/schema.json" --url "http://127.0.0.1:$PORT" "${auth[@]}" \
      --checks all --max-examples "$EXAMPLES" --seed 1 --workers 2 --no-color --phases "${SCHEMATHESIS_PHASES:-examples,fuzzing}" --request-timeout 30 \
      --generation-database none --report junit --report-dir "$work/report-$who" >"$work/$who.log" 2>&1; then
    if grep -qE "❌|Network Error|Server error" "$work/$who.log"; then
      status=1
      tail -120 "$work/$who.log"
    else
      echo "schemathesis reported only internal errors of its own:"; grep -E "Runtime Error|KeyError" "$work/$who.log" | head -3
      grep -E "generated" "$work/$who.log" | tail -1
    fi
  else
    grep -E "passed|failed|API Operations|Test cases" "$work/$who.log" | tail -4
  fi
done
if [ $status -ne 0 ]; then echo "server log:"; tail -40 "$work/gunicorn.log"; fi
exit $status
