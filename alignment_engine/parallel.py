"""Run independent jobs in worker processes, at most ``workers`` at a time, with their progress and log lines
forwarded to the parent (the members of a seed ensemble: :func:`alignment_engine.training.train_model`).

A worker is a fresh interpreter, ``python -m alignment_engine.parallel``: it inherits no state from a parent
whose torch or OpenMP pools may already run threads, and it never imports the caller's main module, so a
researcher's script needs no ``if __name__ == "__main__"`` guard and a daemonic process (a Celery or
multiprocessing pool's) may start one. ``target`` must be a module-level function, and a job and its result
picklable. The job arrives on the worker's stdin; its messages come back on a pipe of their own (whatever the
job prints stays out of them), each a length-prefixed pickle.

A job reports through the ``report`` callable it receives: ``report(done, total)`` for its progress,
``report(message)`` for a log line; the parent hears them as ``on_progress(index, done, total)`` and
``on_log(index, message)``. Failures stay exact: an exception in a job is raised in the parent (the same
exception when it pickles), and so is an exception raised by the parent's own callbacks (a cancelled job);
either way the other workers are killed first, so nothing keeps running behind the caller's back. A worker
that dies without a result (killed, out of memory) is a :class:`RuntimeError` naming the job and its exit code.

With ``workers`` <= 1 or a single job, the jobs run in this process one after the other, through the same
``report``: the same results, only slower.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import struct
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
#: The environment variable that tells a worker which file descriptor its messages go to.
EVENTS_FD = "ALIGNMENT_ENGINE_EVENTS_FD"
#: A worker is short-lived: glibc's malloc keeps what it frees for the next allocation instead of unmapping it and
#: faulting fresh pages in (the CRFs allocate and free large tensors every step). Measured on DEplain-web train
#: (``scripts/bench_crf_training.py``, a Zen 4): the semi-Markov CRF's epochs 8.75 -> 6.74 s, the first-order CRF's
#: 2.27 -> 1.74 s, page faults 1.6 M -> 0.36 M, the same peak memory; the arithmetic, and so the model, is the same.
#: A value already in the environment wins.
WORKER_ENV = {"MALLOC_MMAP_THRESHOLD_": str(4 << 30), "MALLOC_TRIM_THRESHOLD_": str(4 << 30)}
_HEADER = struct.Struct("!I")


def run_jobs(target: Callable[[Any, Callable[..., None]], T], jobs: Sequence[Any], workers: int,
             on_progress: Callable[[int, int, int], None], on_log: Callable[[int, str], None]) -> list[T]:
    """``[target(job, report) for job in jobs]``, at most ``workers`` jobs at a time in worker processes."""
    if workers <= 1 or len(jobs) <= 1:
        def here(i: int) -> Callable[..., None]:
            return lambda *args: _dispatch(i, _message(args), on_progress, on_log)

        return [target(job, here(i)) for i, job in enumerate(jobs)]
    results: dict[int, T] = {}
    running: dict[int, _Worker] = {}
    pending = list(range(len(jobs)))
    selector = selectors.DefaultSelector()
    try:
        while pending or running:
            while pending and len(running) < workers:
                i = pending.pop(0)
                running[i] = _Worker(i, target, jobs[i])
                selector.register(running[i].events, selectors.EVENT_READ, i)
            for key, _ in selector.select(timeout=1.0):
                i = key.data
                message = running[i].read()
                if message is None:  # the pipe closed: the worker has ended
                    selector.unregister(running[i].events)
                    worker = running.pop(i)
                    code = worker.finish()
                    if i not in results:
                        raise RuntimeError(f"job {i}: its worker process exited with code {code} without a result "
                                           "(killed, or out of memory?)")
                    continue
                if message[0] == "done":
                    results[i] = message[1]
                elif message[0] == "error":  # the job's exception, or its description when it does not pickle
                    error, trace = message[1], message[2]
                    if isinstance(error, BaseException):
                        raise error from RuntimeError(f"in job {i}:\n{trace}")
                    raise RuntimeError(f"job {i} failed: {error}\n{trace}")
                else:
                    _dispatch(i, message, on_progress, on_log)
    finally:
        for worker in running.values():
            worker.kill()
        selector.close()
    return [results[i] for i in range(len(jobs))]


class _Worker:
    """One worker process running one job."""

    def __init__(self, index: int, target: Callable[..., Any], job: Any) -> None:
        read_fd, write_fd = os.pipe()
        env = {**WORKER_ENV, **os.environ, EVENTS_FD: str(write_fd)}
        root = str(Path(__file__).resolve().parent.parent)  # wherever the parent imported the engine from
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
        self.proc = subprocess.Popen([sys.executable, "-m", "alignment_engine.parallel"], stdin=subprocess.PIPE,
                                     pass_fds=(write_fd,), env=env)
        os.close(write_fd)
        self.events = read_fd  # unbuffered: what select() reports readable is all there is
        assert self.proc.stdin is not None
        # a worker that dies at once breaks the pipe: its exit code says so when its message pipe closes
        with self.proc.stdin as stdin, contextlib.suppress(BrokenPipeError):
            pickle.dump((target, index, job), stdin, protocol=pickle.HIGHEST_PROTOCOL)

    def read(self) -> tuple | None:
        """The worker's next message; None when the pipe has closed (the worker has ended)."""
        header = self._exactly(_HEADER.size)
        if header is None:
            return None
        body = self._exactly(_HEADER.unpack(header)[0])
        if body is None:
            return None
        message: tuple = pickle.loads(body)  # noqa: S301 - our own worker's message
        return message

    def _exactly(self, size: int) -> bytes | None:
        chunks: list[bytes] = []
        while size:
            chunk = os.read(self.events, size)
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def finish(self) -> int:
        os.close(self.events)
        return self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        os.close(self.events)


def _message(args: tuple) -> tuple:
    """What a job's ``report(*args)`` says: ``("progress", done, total)`` or ``("log", message)``."""
    return ("progress", int(args[0]), int(args[1])) if len(args) == 2 else ("log", str(args[0]))


def _dispatch(index: int, message: tuple, on_progress: Callable[[int, int, int], None],
              on_log: Callable[[int, str], None]) -> None:
    if message[0] == "progress":
        on_progress(index, message[1], message[2])
    else:
        on_log(index, message[1])


def _worker_main() -> None:
    """A worker: read ``(target, index, job)`` from stdin, run it, send its messages and its result."""
    events = os.fdopen(int(os.environ[EVENTS_FD]), "wb")

    def send(message: tuple) -> None:
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - what does not pickle travels as its description
            if message[0] == "error":  # the job's exception
                message = ("error", f"{type(message[1]).__name__}: {message[1]}", message[2])
            else:  # its result
                message = ("error", f"its {message[0]!r} message does not pickle: {type(e).__name__}: {e}", "")
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        events.write(_HEADER.pack(len(data)) + data)
        events.flush()

    target, _index, job = pickle.load(sys.stdin.buffer)  # noqa: S301 - sent by our own parent
    try:
        result = target(job, lambda *args: send(_message(args)))
    except BaseException as e:  # noqa: BLE001 - every failure reaches the parent, which raises it
        send(("error", e, traceback.format_exc()))
        return
    send(("done", result))
    events.close()


if __name__ == "__main__":
    _worker_main()
