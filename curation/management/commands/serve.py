"""Run the product: a Celery worker process and the web server, until Ctrl-C.

Used by `make run` on the embedded default (SQLite + filesystem broker); works the same
against PostgreSQL and Redis when DATABASE_URL / CELERY_BROKER_URL point there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

QUEUES = "default,align,train,export"


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _die_with_parent() -> None:
    """Linux: the worker gets SIGTERM if this process dies without cleaning up."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Command(BaseCommand):
    help = "Start a Celery worker (all queues) and the web server; stop both on exit."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("PORT", "8000"))
        parser.add_argument("--concurrency", default=os.environ.get("WORKER_CONCURRENCY", "2"))
        parser.add_argument("--no-worker", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        # SIGTERM (e.g. from a process manager) must run the cleanup below, like Ctrl-C does.
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        worker = None
        if not options["no_worker"]:
            worker = subprocess.Popen(
                [
                    sys.executable, "-m", "celery", "-A", "config", "worker",
                    "-Q", QUEUES, "--concurrency", str(options["concurrency"]),
                    "--loglevel", "INFO", "--hostname", "embedded@%h",
                ],
                preexec_fn=_die_with_parent,
            )
            self.stdout.write(f"Celery worker started (pid {worker.pid}, queues {QUEUES})")
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(self.style.SUCCESS(f"\nOpen {url}  (log in with one of the demo users printed above)\n"))
        try:
            call_command("runserver", f"{options['host']}:{options['port']}", use_reloader=False)
        finally:
            if worker is not None and worker.poll() is None:
                worker.terminate()
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()
