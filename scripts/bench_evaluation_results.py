#!/usr/bin/env python
"""Results page of a human-evaluation study: first (cold) and warm request, through the Django
test client, with the dev settings (SQLite, file-based cache) in a throwaway VAR_DIR.

    nice .venv/bin/python scripts/bench_evaluation_results.py               # 100 items, 3 systems, 5 raters/item, Likert
    nice .venv/bin/python scripts/bench_evaluation_results.py --items 50 --repeat 5

Setup (not timed): migrate, create the study from synthetic outputs, let simulated raters
answer every page through the real services. Then: GET the results page (cold: computed),
GET it ``--repeat`` times (warm: from the cache), exclude a rater and GET again (recomputed:
a new fingerprint), then once more (warm). ``--no-cache`` runs the same with a DummyCache. Printed: seconds and queries per request.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--raters", type=int, default=5, help="raters per item")
    ap.add_argument("--pool", type=int, default=12, help="simulated raters")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-cache", action="store_true", help="DummyCache: every request computes (the figures before the cache)")
    args = ap.parse_args()
    var = tempfile.mkdtemp(prefix="bench-evalres-")
    os.environ["VAR_DIR"] = var
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    settings.ALLOWED_HOSTS = ["*"]
    if args.no_cache:
        from django.test import override_settings

        override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}).enable()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    from accounts.roles import Role, grant
    from annotation.evaluation.importers import ItemInput
    from annotation.evaluation.services import raters, simulated, studies

    words = ["the", "city", "council", "approved", "a", "new", "budget", "on", "tuesday", "after", "a", "long", "and", "heated", "debate", "about", "money"]
    items = []
    for k in range(args.items):
        src = " ".join(words[(k + j) % len(words)] for j in range(14)) + "."
        ref = " ".join(src.split()[:7]) + "."
        outs = {"alpha": ref, "beta": " ".join(src.split()[:9]) + ".", "gamma": src}
        items.append(ItemInput(f"i{k}", src, [ref], outs, k + 1))
    t0 = time.perf_counter()
    study = studies.create_study("bench", studies.StudySettings(design="likert", raters_per_item=args.raters, min_seconds=0,
                                                                sample_size=args.items), items, source_info={"file": "bench"})
    pages = simulated.run(study, simulated.make_raters(args.pool, 0, 4.0, 0), simulated.default_quality(study))
    print(f"setup: {args.items} items, {pages} pages answered in {time.perf_counter() - t0:.1f} s (not timed below)")
    user = get_user_model().objects.create_user("bench-researcher", password="x")
    grant(user, Role.RESEARCHER)
    client = Client()
    client.force_login(user)
    url = reverse("evaluation:results", args=[study.pk])

    def get(label: str) -> None:
        connection.queries_log.clear()
        with CaptureQueriesContext(connection) as q:
            t = time.perf_counter()
            r = client.get(url)
            dt = time.perf_counter() - t
        assert r.status_code == 200, r.status_code
        print(f"{label:<24} {dt * 1000:8.0f} ms  {len(q.captured_queries):3d} queries")

    get("first (computed)")
    for k in range(args.repeat):
        get(f"repeat {k + 1}")
    raters.exclude_rater(study, get_user_model().objects.get(username="sim-rater-0").pk)
    get("after an exclusion")
    get("repeat after it")


if __name__ == "__main__":
    main()
