"""Run the product: a Celery worker process and the web server, until Ctrl-C or SIGTERM.

Used by `make run` on the embedded default (SQLite + filesystem broker); works the same
against PostgreSQL and Redis when DATABASE_URL / CELERY_BROKER_URL point there.

The port comes from ``--port`` or the ``PORT`` variable (default 8000); a port already in use is
reported before anything starts (exit status 1). Ctrl-C and SIGTERM stop the web server and the
worker within about 10 seconds: the worker gets a warm shutdown, then a cold one (tasks are acked
late, so an interrupted task is delivered again), then SIGKILL.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

QUEUES = "default,align,train,export"
WARM_SECONDS = 5.0  # a worker that finishes no task in this time gets a cold shutdown
COLD_SECONDS = 3.0


class Stop(Exception):
    """SIGTERM or Ctrl-C arrived: stop the server and the worker."""


def _stop(signum: int, frame: object) -> None:
    raise Stop


def _die_with_parent() -> None:
    """Linux: the worker gets SIGTERM if this process dies without cleaning up."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def port_problem(host: str, port: int) -> str | None:
    """Why the web server could not listen on host:port (in use, not allowed), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is already in use"
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def stop_worker(worker: subprocess.Popen[bytes], warm: float = WARM_SECONDS, cold: float = COLD_SECONDS) -> str:
    """Warm shutdown (SIGTERM), then cold (SIGQUIT) of the worker's main process (it stops its pool),
    then SIGKILL of its whole process group."""
    if worker.poll() is not None:
        return "already stopped"
    for sig, wait, name in ((signal.SIGTERM, warm, "warm shutdown"), (signal.SIGQUIT, cold, "cold shutdown")):
        try:
            worker.send_signal(sig)
        except ProcessLookupError:
            return name
        try:
            worker.wait(timeout=wait)
            return name
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    return "killed"


class Command(BaseCommand):
    help = "Start a Celery worker (all queues) and the web server; stop both on Ctrl-C or SIGTERM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("PORT", "8000"), help="web port (default: $PORT, else 8000)")
        parser.add_argument("--concurrency", default=os.environ.get("WORKER_CONCURRENCY", "2"))
        parser.add_argument("--no-worker", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        host, raw_port = options["host"], str(options["port"])
        if not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
            raise CommandError(f"--port / PORT must be a port number, got {raw_port!r}")
        port = int(raw_port)
        problem = port_problem(host, port)
        if problem is not None:
            raise CommandError(f"{problem}; choose another port: make run PORT=8001 (or manage.py serve --port 8001)")
        # SIGTERM (e.g. from a process manager) and Ctrl-C both run the cleanup below, once.
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        worker: subprocess.Popen[bytes] | None = None
        try:
            if not options["no_worker"]:
                worker = subprocess.Popen(
                    [
                        sys.executable, "-m", "celery", "-A", "config", "worker",
                        "-Q", QUEUES, "--concurrency", str(options["concurrency"]),
                        "--loglevel", "INFO", "--hostname", "embedded@%h",
                    ],
                    preexec_fn=_die_with_parent,
                    start_new_session=True,  # a terminal's Ctrl-C reaches this process only; it stops the worker
                )
                self.stdout.write(f"Celery worker started (pid {worker.pid}, queues {QUEUES})")
            url = f"http://{host}:{port}/"
            self.stdout.write(self.style.SUCCESS(f"\nOpen {url}  (log in with one of the demo users printed above)\n"))
            call_command("runserver", f"{host}:{port}", use_reloader=False)
        except (Stop, KeyboardInterrupt):
            pass
        except SystemExit as exc:  # runserver exits 0 on an interrupt, non-zero when it cannot start
            if exc.code not in (0, None):
                raise
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not interrupt the cleanup
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if worker is not None:
                started = time.monotonic()
                how = stop_worker(worker)
                self.stdout.write(f"Stopped the worker: {how} after {time.monotonic() - started:.1f} s.")
            self.stdout.write("Bye.")
            # The interpreter's last garbage collection over everything Django imported takes seconds
            # on a busy machine; nothing is left to collect, so move it all out of the collector's way.
            gc.freeze()
