"""The runner of background jobs in a child process (``viewer.core.jobs``): messages stream
back, the result or the error comes back, cancel and kill, and the fallback on this thread."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import pytest

from viewer.core import jobs


@dataclass(frozen=True)
class Count:
    """Emit 0..n-1 with the pid that ran it, return their sum (or raise at ``fail_at``)."""

    n: int
    fail_at: int = -1

    def __call__(self, emit: jobs.Emit, cancelled: threading.Event) -> int:
        for k in range(self.n):
            if k == self.fail_at:
                raise ValueError(f"bad item {k}")
            emit((k, os.getpid()))
        return sum(range(self.n))


@dataclass(frozen=True)
class WaitForCancel:
    """Emit "started", then wait until cancelled (``obey``) or a minute passes."""

    obey: bool = True

    def __call__(self, emit: jobs.Emit, cancelled: threading.Event) -> str:
        emit("started")
        for _ in range(600):
            if self.obey and cancelled.wait(0.1):
                return "stopped early"
            if not self.obey:
                threading.Event().wait(0.1)
        return "ran to the end"


@dataclass(frozen=True)
class ElsewhereOnly:
    def __call__(self, emit: jobs.Emit, cancelled: threading.Event) -> str:
        raise jobs.NotHere("only the parent can")


def test_a_work_runs_in_a_child_and_streams_its_messages() -> None:
    got: list[Any] = []
    job: jobs.Job[int] = jobs.Job(Count(5), got.append)
    assert job.run() == 10
    assert job.used_process
    assert [k for k, _ in got] == [0, 1, 2, 3, 4]
    assert {pid for _, pid in got} != {os.getpid()}


def test_the_works_error_is_raised_with_the_messages_before_it() -> None:
    got: list[Any] = []
    job: jobs.Job[int] = jobs.Job(Count(5, fail_at=3), got.append)
    with pytest.raises(ValueError, match="bad item 3"):
        job.run()
    assert job.used_process and [k for k, _ in got] == [0, 1, 2]


def test_not_here_runs_the_local_work_on_this_thread() -> None:
    got: list[Any] = []

    def local(emit: jobs.Emit, cancelled: threading.Event) -> str:
        emit(threading.get_ident())
        return "here"

    job: jobs.Job[str] = jobs.Job(ElsewhereOnly(), got.append, local=local)
    assert job.run() == "here"
    assert not job.used_process and got == [threading.get_ident()]


def test_without_processes_the_work_runs_here() -> None:
    got: list[Any] = []
    job: jobs.Job[int] = jobs.Job(Count(3), got.append, use_process=False)
    assert job.run() == 3 and not job.used_process
    assert {pid for _, pid in got} == {os.getpid()}


@pytest.mark.parametrize("use_process", [True, False], ids=["child", "thread"])
def test_cancel_lets_the_work_return_its_partial_result(use_process: bool) -> None:
    job: jobs.Job[str] = jobs.Job(WaitForCancel(), lambda m: job.cancel(),
                                  use_process=use_process)
    assert job.run() == "stopped early"
    assert job.cancelled and job.used_process == use_process


def test_kill_ends_a_child_that_does_not_listen() -> None:
    job: jobs.Job[str] = jobs.Job(WaitForCancel(obey=False), lambda m: job.kill())
    with pytest.raises(jobs.JobCancelled):
        job.run()


def test_a_killed_job_does_not_start_here() -> None:
    job: jobs.Job[int] = jobs.Job(Count(3), use_process=False)
    job.kill()
    with pytest.raises(jobs.JobCancelled):
        job.run()


@dataclass(frozen=True)
class ReportSettings:
    """Return the settings of reading the process that runs it has (and its pid)."""

    def __call__(self, emit: jobs.Emit, cancelled: threading.Event) -> tuple[Any, int]:
        from viewer.format import config

        return config.default(), os.getpid()


def test_the_child_reads_with_the_settings_it_is_handed_not_its_environment(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from viewer.environment import CACHE_DIR_ENV
    from viewer.format.config import ReadConfig

    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "from-the-environment"))
    given = ReadConfig(anon=True, timeout_s=3.5, cache_bytes=7 << 20, cache_size_given=True,
                       cache_dir=str(tmp_path / "handed"), merge_gap=1000)
    job: jobs.Job[tuple[Any, int]] = jobs.Job(ReportSettings(), config=given)
    got, pid = job.run()
    assert job.used_process and pid != os.getpid()
    assert got == given
