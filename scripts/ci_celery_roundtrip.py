"""Start a real Celery worker (broker from CELERY_BROKER_URL), send config.ping, check the answer."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> int:
    import django

    django.setup()
    from config.celery import app, ping

    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default", "--concurrency", "1",
         "--loglevel", "WARNING", "--hostname", f"ci-{os.getpid()}@%h"],
        cwd=ROOT,
    )
    try:
        started = time.monotonic()
        result = ping.delay(41)
        value = result.get(timeout=120)
        print(f"broker {app.conf.broker_url}: ping(41) -> {value} in {time.monotonic() - started:.1f}s")
        return 0 if value == 42 else 1
    finally:
        worker.terminate()
        worker.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
