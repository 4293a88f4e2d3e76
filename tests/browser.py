"""Browser-test helpers: Debian's chromium driven by Playwright for Python (never a downloaded
browser), pages logged in as a given user, screenshots into $ARTIFACTS_DIR, and axe-core's
accessibility check (npm package under node_modules/, installed by scripts/ensure_chromium.sh)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.test import Client

ARTIFACTS_DIR = Path(os.environ.get("ARTIFACTS_DIR", "artifacts"))
AXE_JS = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING_IMPACTS = ("serious", "critical")
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


def axe_available() -> bool:
    return AXE_JS.is_file()


def axe_violations(page: Any, impacts: tuple[str, ...] = BLOCKING_IMPACTS) -> list[dict[str, Any]]:
    """axe-core's violations of ``impacts`` on the page as it is now (WCAG 2.1 A/AA rules and best practices)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # evaluated through the debugging protocol, which the page's Content-Security-Policy does not
        # govern (a <script> tag would be refused, and the pages are checked under their real policy)
        page.evaluate(AXE_JS.read_text(encoding="utf-8") + "\n;undefined")
    result = page.evaluate("async () => await window.axe.run(document, {resultTypes: ['violations']})")
    return [v for v in result["violations"] if v.get("impact") in impacts]


def describe_violations(violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        targets = "; ".join(" ".join(n["target"]) if isinstance(n["target"], list) else str(n["target"]) for n in v["nodes"][:4])
        lines.append(f"{v['impact']}: {v['id']} ({v['help']}) at {targets}")
    return "\n".join(lines)


def assert_accessible(page: Any, where: str = "") -> None:
    """No serious or critical axe-core violation on the page (skips the check when axe-core is missing)."""
    import pytest

    if not axe_available():
        pytest.skip(f"axe-core not installed at {AXE_JS} (scripts/ensure_chromium.sh installs it)")
    found = axe_violations(page)
    assert not found, f"accessibility violations on {where or page.url}:\n{describe_violations(found)}"
