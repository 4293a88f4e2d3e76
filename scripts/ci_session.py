"""Log in through the login form and print the two headers an API client needs for a session:
``Cookie: sessionid=...; csrftoken=...`` and ``X-CSRFToken: ...`` (scripts/ci_schemathesis.sh).

    .venv/bin/python scripts/ci_session.py http://127.0.0.1:8000 USER PASSWORD
"""

from __future__ import annotations

import sys

import requests


def main(base: str, user: str, password: str) -> None:
    # With DEBUG=0 the cookies are marked Secure; over plain HTTP on 127.0.0.1 they are sent by hand.
    token = requests.get(f"{base}/login/", timeout=30).cookies.get("csrftoken")
    if not token:
        raise SystemExit(f"{base}/login/ set no csrftoken cookie")
    response = requests.post(f"{base}/login/", data={"username": user, "password": password, "csrfmiddlewaretoken": token},
                             cookies={"csrftoken": token}, headers={"Referer": f"{base}/login/"},
                             allow_redirects=False, timeout=30)
    if response.status_code != 302 or "sessionid" not in response.cookies:
        raise SystemExit(f"login as {user} failed: HTTP {response.status_code}")
    token = response.cookies.get("csrftoken", token)  # rotated at login
    print(f"Cookie: sessionid={response.cookies['sessionid']}; csrftoken={token}")
    print(f"X-CSRFToken: {token}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
