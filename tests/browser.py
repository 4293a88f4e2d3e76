"""Browser-test helpers: Debian's chromium driven by Playwright for Python (never a downloaded
browser), pages logged in as a given user, and screenshots into $ARTIFACTS_DIR."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.test import Client

ARTIFACTS_DIR = Path(os.environ.get("ARTIFACTS_DIR", "artifacts"))
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def logged_in_page(browser: Any, base_url: str, user: Any, width: int = 1360, height: int = 860) -> Any:
    """A new page whose session cookie belongs to ``user`` (no login form round trip)."""
    client = Client()
    client.force_login(user)
    # bypass_csp: Playwright evaluates the tests' own string predicates (wait_for_function) with
    # eval, which the site's Content-Security-Policy forbids; the policy itself is tested in
    # tests/test_hardening.py, and the pages carry no inline code for it to block.
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": base_url}])
    return context.new_page()


def screenshot(page: Any, name: str) -> Path:
    """Full-page PNG in ARTIFACTS_DIR, after the last repaint has landed."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(150)
    path = ARTIFACTS_DIR / name
    page.screenshot(path=str(path), full_page=True)
    return path
