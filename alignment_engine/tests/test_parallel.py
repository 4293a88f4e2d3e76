"""Jobs in worker processes (alignment_engine.parallel): results, forwarded messages, failures, cancellation."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from alignment_engine.parallel import run_jobs

ROOT = Path(__file__).resolve().parents[2]


class Cancelled(Exception):
    """What a job's owner raises from its progress callback to stop it."""


def square(job: int, report: Callable[..., None]) -> tuple[int, int]:
    report(f"squaring {job}")
    report(1, 2)
    report(2, 2)
    return job * job, os.getpid()


def fail_or_wait(job: tuple[str, str], report: Callable[..., None]) -> int:
    kind, pid_file = job
    Path(pid_file).write_text(str(os.getpid()))
    if kind == "fail":
        time.sleep(0.5)  # the other worker is running by now
        raise ValueError("bad input in job 1")
    if kind == "die":
        os._exit(3)
    report(1, 10)
    time.sleep(60)  # only stopped by the parent
    return 0


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers kill(0): it is gone once it no longer runs
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(")")[-1].split()[0] == "Z"


def test_jobs_run_in_other_processes_two_at_a_time_in_job_order_with_their_messages_forwarded() -> None:
    progress: list[tuple[int, int, int]] = []
    logs: list[tuple[int, str]] = []
    results = run_jobs(square, [1, 2, 3], 2, lambda i, d, t: progress.append((i, d, t)), lambda i, m: logs.append((i, m)))
    assert [r for r, _ in results] == [1, 4, 9]
    pids = {pid for _, pid in results}
    assert os.getpid() not in pids and len(pids) == 3  # a fresh worker per job
    assert sorted(logs) == [(0, "squaring 1"), (1, "squaring 2"), (2, "squaring 3")]
    assert sorted(progress) == sorted((i, d, 2) for i in range(3) for d in (1, 2))


def test_one_worker_runs_the_jobs_here_with_the_same_results_and_messages() -> None:
    logs: list[tuple[int, str]] = []
    results = run_jobs(square, [2, 5], 1, lambda *a: None, lambda i, m: logs.append((i, m)))
    assert results == [(4, os.getpid()), (25, os.getpid())]
    assert logs == [(0, "squaring 2"), (1, "squaring 5")]


def test_a_failing_job_raises_its_own_exception_here_and_the_other_worker_is_stopped(tmp_path: Path) -> None:
    jobs = [("wait", str(tmp_path / "0")), ("fail", str(tmp_path / "1"))]
    with pytest.raises(ValueError, match="bad input in job 1"):
        run_jobs(fail_or_wait, jobs, 2, lambda *a: None, lambda *a: None)
    assert _gone(int((tmp_path / "0").read_text()))


def test_an_exception_from_the_owners_callback_cancels_and_stops_every_worker(tmp_path: Path) -> None:
    jobs = [("wait", str(tmp_path / "0")), ("wait", str(tmp_path / "1"))]

    def cancel(i: int, done: int, total: int) -> None:
        raise Cancelled(f"job {i} cancelled at {done}/{total}")

    t0 = time.perf_counter()
    with pytest.raises(Cancelled, match="cancelled at 1/10"):
        run_jobs(fail_or_wait, jobs, 2, cancel, lambda *a: None)
    assert time.perf_counter() - t0 < 30  # not the 60 s the jobs would run
    started = [tmp_path / name for name in ("0", "1") if (tmp_path / name).exists()]
    assert started  # the job that reported had started (and written its pid)
    for pid_file in started:
        assert _gone(int(pid_file.read_text()))


def test_a_worker_that_dies_without_a_result_is_an_error_naming_its_job_and_exit_code(tmp_path: Path) -> None:
    jobs = [("die", str(tmp_path / "0")), ("die", str(tmp_path / "1"))]
    with pytest.raises(RuntimeError, match=r"job [01]: its worker process exited with code 3"):
        run_jobs(fail_or_wait, jobs, 2, lambda *a: None, lambda *a: None)


def test_a_script_without_a_main_guard_can_run_jobs_in_workers(tmp_path: Path) -> None:
    """The workers never import the caller's main module (multiprocessing's spawn would run this script again)."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from alignment_engine.parallel import run_jobs\n"
        "from alignment_engine.tests.test_parallel import square\n"
        "print([r for r, _ in run_jobs(square, [3, 4], 2, lambda *a: None, lambda *a: None)])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[9, 16]"


def _in_a_daemon(out: str) -> None:
    results = run_jobs(square, [5, 6], 2, lambda *a: None, lambda *a: None)
    Path(out).write_text(repr([r for r, _ in results]))


def test_a_daemonic_process_like_a_celery_pool_worker_can_run_jobs_in_workers(tmp_path: Path) -> None:
    """multiprocessing forbids a daemonic process children of its own; the workers are plain subprocesses."""
    import multiprocessing

    proc = multiprocessing.get_context("spawn").Process(target=_in_a_daemon, args=(str(tmp_path / "out"),), daemon=True)
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0
    assert (tmp_path / "out").read_text() == "[25, 36]"


class Unpicklable(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()  # cannot cross a process boundary

    def __reduce__(self):  # type: ignore[no-untyped-def]
        raise TypeError("cannot pickle this exception")


def raise_unpicklable(job: int, report: Callable[..., None]) -> int:
    raise Unpicklable(f"odd failure in {job}")


def malloc_env(job: int, report: Callable[..., None]) -> tuple[str | None, str | None]:
    return os.environ.get("MALLOC_MMAP_THRESHOLD_"), os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_an_exception_that_does_not_pickle_arrives_as_its_description() -> None:
    with pytest.raises(RuntimeError, match=r"job [01] failed: Unpicklable: odd failure in [78]"):
        run_jobs(raise_unpicklable, [7, 8], 2, lambda *a: None, lambda *a: None)


def test_workers_keep_freed_memory_unless_the_environment_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from alignment_engine.parallel import WORKER_ENV

    expected = (WORKER_ENV["MALLOC_MMAP_THRESHOLD_"], WORKER_ENV["MALLOC_TRIM_THRESHOLD_"])
    assert run_jobs(malloc_env, [0, 1], 2, lambda *a: None, lambda *a: None) == [expected, expected]
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1234")
    assert run_jobs(malloc_env, [0, 1], 2, lambda *a: None, lambda *a: None)[0] == (expected[0], "1234")
