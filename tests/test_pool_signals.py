"""Signals and the sensitivity analysis's process pool (issue 39).

Ctrl-C at a terminal reaches the whole process group, the pool's workers included: it
must end `plan --sensitivity` as it ends the main process alone (exit 130, one message,
no worker's traceback). `kill -9` of the parent must not leave its workers behind.

The command runs as a user runs it, in a session of its own (so the group signal reaches
it and its workers, not pytest), with SIGINT at its default as at a terminal
(`test_signals._ctrl_c_as_at_a_terminal`: never start these children with a shell `&`).
Workers are found through /proc (Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.support.shipped import ROOT

from gpusolve.analyses import pool
from gpusolve.analyses.probing import Parameter

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="workers found via /proc"),
    pytest.mark.skipif(
        len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else True,
        reason="one core: the analysis runs in-process, no pool",
    ),
]

# Its pool of two workers runs for a second or more, after a second or two of planning.
EXAMPLE = str(ROOT / "examples" / "finetune-7b-deadline.yaml")
# What the command says when Ctrl-C reaches it (the main process alone) while it analyses.
SAID = "gpusolve: interrupted during the sensitivity analysis: the plan above has none"
CHILD = Path(__file__).with_name("pool_child.py")
# From the signal to the answer (as tests/test_signals.py: a loaded 2-core machine).
PROMPT_S = 8.0
# How long a worker may outlive its parent (the bound).
ORPHAN_S = 5.0


def _own_group_ctrl_c_default() -> None:
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_own_group_ctrl_c_default,
    )


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    return fields[0], int(fields[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == pid and stat[0] != "Z":
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"  # a zombie has exited (nobody reaped it yet)


def _workers(proc: subprocess.Popen[str], limit_s: float = 120) -> list[int]:
    """The pool's workers once they have started; [] if the run ended first."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end and proc.poll() is None:
        workers = _children(proc.pid)
        if workers:
            time.sleep(0.3)  # into their tasks
            return _children(proc.pid)
        time.sleep(0.05)
    return []


def _survivors(workers: list[int]) -> list[int]:
    """The workers still running `ORPHAN_S` from now (none: at once)."""
    deadline = time.monotonic() + ORPHAN_S
    while any(_running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [w for w in workers if _running(w)]


def _survivors_of_kill_9(proc: subprocess.Popen[str], workers: list[int]) -> list[int]:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    return _survivors(workers)


def _end_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def test_group_ctrl_c_during_sensitivity_exits_130_without_a_worker_traceback() -> None:
    for _ in range(3):
        proc = _start([sys.executable, "-m", "gpusolve", "plan", EXAMPLE, "--sensitivity"])
        try:
            workers = _workers(proc)
            if not workers:
                continue  # the analysis ended before its pool was seen: too loaded, again
            sent = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at a terminal does
            out, err = proc.communicate(timeout=60)
            took = time.monotonic() - sent
        finally:
            _end_group(proc)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        assert [line for line in err.splitlines() if "nterrupt" in line] == [SAID], err
        assert out.startswith("Plan (") and "Sensitivity" not in out
        assert took < PROMPT_S
        assert not _survivors(workers)
        return
    pytest.fail("the pool was never seen running, three times: too loaded to judge")


@pytest.mark.parametrize("watcher", [False, True], ids=["parent-death-signal", "watcher-thread"])
def test_no_worker_outlives_a_killed_parent(watcher: bool) -> None:
    """`kill -9` of the parent: every worker is gone within 5 s, by the kernel's
    parent-death signal (Linux) and by the portable watcher thread alone."""
    args = [sys.executable, str(CHILD)] + (["--watcher"] if watcher else [])
    proc = _start(args)
    try:
        workers = _workers(proc, limit_s=60)
        assert len(workers) == 2, proc.stderr.read() if proc.poll() is not None else workers
        assert not _survivors_of_kill_9(proc, workers), "workers outlived their parent"
    finally:
        _end_group(proc)


def test_no_worker_outlives_a_killed_plan_sensitivity() -> None:
    """The same through the command itself: `kill -9` of `plan --sensitivity`."""
    proc = _start([sys.executable, "-m", "gpusolve", "plan", "-q", EXAMPLE, "--sensitivity"])
    try:
        workers = _workers(proc)
        if not workers:
            pytest.skip("the analysis ended before its pool was seen")
        assert not _survivors_of_kill_9(proc, workers), "workers outlived their parent"
    finally:
        _end_group(proc)


@dataclass(frozen=True)
class _Report:
    """A task that reports how its worker was set up (`pool._adopt`)."""

    parameter: Parameter

    def analyse(self, inputs: Any) -> Any:
        death = ctypes.c_int(0)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(2, ctypes.byref(death), 0, 0, 0)  # PR_GET_PDEATHSIG
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        return (
            signal.getsignal(signal.SIGINT),
            signal.getsignal(signal.SIGTERM),
            signal.SIGINT in blocked or signal.SIGTERM in blocked,
            death.value,
        )


def test_a_worker_leaves_signals_to_its_parent_and_dies_with_it() -> None:
    """In-process: the parent raises KeyboardInterrupt on SIGTERM (as `stoppable` sets it);
    each worker ignores SIGINT, takes SIGTERM's default (the pool's terminate ends it
    quietly), has neither blocked once started, and is armed to die with its parent."""

    def raise_interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        tasks = [_Report(Parameter("price", f"x{i}", f"price of x{i}", "CNY", 1.0)) for i in (1, 2)]
        reports = pool.run_tasks(tasks, workers=2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert reports == [(signal.SIG_IGN, signal.SIG_DFL, False, signal.SIGKILL)] * 2
    # the forking thread's own mask is as it was
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
