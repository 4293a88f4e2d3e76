"""`manage.py serve`: a port in use is refused before anything starts; the worker stops in steps."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import time

import pytest
from django.core.management import CommandError, call_command

from curation.management.commands.serve import port_problem, stop_worker


def test_a_port_in_use_is_refused_before_any_url_is_printed() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert "already in use" in (port_problem("127.0.0.1", port) or "")
        out = io.StringIO()
        with pytest.raises(CommandError, match=f"port {port} on 127.0.0.1 is already in use.*--port"):
            call_command("serve", "--port", str(port), "--no-worker", stdout=out)
        assert "Open http" not in out.getvalue()
    assert port_problem("127.0.0.1", port) is None
    with pytest.raises(CommandError, match="port number"):
        call_command("serve", "--port", "eighty", "--no-worker")


def test_a_worker_that_ignores_sigterm_is_stopped_within_the_limits() -> None:
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "signal.signal(signal.SIGQUIT, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"],
                                stdout=subprocess.PIPE, start_new_session=True)
    assert stubborn.stdout is not None and stubborn.stdout.readline() == b"up\n"
    started = time.monotonic()
    assert stop_worker(stubborn, warm=0.3, cold=0.3) == "killed"
    assert time.monotonic() - started < 3 and stubborn.poll() is not None
    polite = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, start_new_session=True)
    assert polite.stdout is not None and polite.stdout.readline() == b"up\n"
    assert stop_worker(polite, warm=5, cold=1) == "warm shutdown"
