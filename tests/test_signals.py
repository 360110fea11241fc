"""Ctrl-C and SIGTERM during a solve (issue 22): the search stops promptly, the best plan
so far is kept and marked, and the command exits 130.

Two levels: a large generated instance (benchmarks' L scale, seed 1: 15-40 s of search) solved in a
child process that receives the signal mid-search, which shows the stop is prompt and
keeps a plan; and the `plan` command itself, run as a user runs it, interrupted after its
first progress line, and in-process with a stop requested while it plans.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.shipped import ROOT

from gpusolve.optimize import interrupt

CHILD = Path(__file__).with_name("signal_child.py")
EXAMPLE = str(ROOT / "examples" / "finetune-7b-deadline.yaml")
# From the signal to the answer. The solver stops within milliseconds; reading out the
# plan and the interpreter's exit take the rest on a loaded 2-core machine.
PROMPT_S = 8.0


def _ctrl_c_as_at_a_terminal() -> None:
    """In the child before it starts: SIGINT back to its default. A suite started in the
    background (`cmd &` in a script) has SIGINT ignored, every child inherits that, and
    Python then never answers it; at a terminal it is never ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _until(proc: subprocess.Popen[str], needle: str, limit_s: float = 120) -> str:
    """Read stderr lines until one contains `needle`."""
    assert proc.stderr is not None
    seen = ""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
        if needle in line:
            return seen
    pytest.fail(f"no {needle!r} line; stderr so far:\n{seen}")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_search_stops_the_search_promptly(signum: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), "L", "1", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_at_a_terminal,
    )
    try:
        _until(proc, "searching")
        time.sleep(1.0)  # into the search
        sent = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    result: dict[str, Any] = json.loads(out)
    assert result["interrupted"] is True
    # Stopped, not proven: the uninterrupted run searches 10-40 s more. Whether a plan
    # was held at that moment depends on the machine (the root LP of this instance takes
    # seconds); `test_plan_interrupted_mid_solve_prints_the_plan_marked` shows the plan
    # kept and marked.
    assert result["status"] in ("feasible", "unknown"), result
    assert (result["status"] == "feasible") == (result["plans"] > 0), result
    assert took < PROMPT_S, f"{took:.1f} s from the signal to the answer"


def test_ctrl_c_after_the_first_progress_line_exits_130_at_once() -> None:
    """A signal before any search has started has no plan to keep: exit 130, no wait.

    The signal is sent when the test reads the first progress line; on a loaded machine
    it can land later: after the search began (the plan so far is then printed, marked:
    still exit 130, never a plan claimed optimal), or after the run ended (a finished,
    proven plan: the attempt says nothing, and is made again). A signal lost while the
    run goes on (the run ends 0 without a finished plan, or says nothing of it) fails."""
    finished = "Plan (min-tco, proven optimal)"
    for _ in range(3):
        code, out, err, took = _interrupt_after_first_line()
        if code in (0, -signal.SIGINT) and out.startswith(finished):
            continue  # the run was over before the signal landed
        assert code == 130, err
        assert "Traceback" not in err
        assert finished not in out
        assert took < PROMPT_S
        return
    pytest.fail("the run ended before the signal landed, three times: too loaded to judge")


def _interrupt_after_first_line() -> tuple[int, str, str, float]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpusolve",
            "plan",
            str(ROOT / "examples" / "scale" / "pretrain-65b-21-days.yaml"),
            "--no-default-catalog",
            "--catalog",
            str(ROOT / "examples" / "scale" / "large-site-a100.yaml"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_at_a_terminal,
    )
    try:
        _until(proc, "gpusolve:")
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    return proc.returncode, out, err, took


def test_plan_interrupted_mid_solve_prints_the_plan_marked(
    gpusolve: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In-process: the stop arrives while the planner runs (as the signal handler would
    deliver it); the plan found is printed as 'interrupted, not proven optimal', exit 130,
    and an existing -o is left as it was."""
    import gpusolve.plan as planner

    real = planner.make_plan

    def make_plan_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        plan = real(*args, **kwargs)
        interrupt.request_stop()
        return plan

    monkeypatch.setattr(planner, "make_plan", make_plan_then_ctrl_c)
    out_file = tmp_path / "plan.json"
    out_file.write_text("previous plan\n")
    result = gpusolve("plan", "-q", EXAMPLE)
    assert result.code == 130, result.err
    assert "interrupted, not proven optimal" in result.out
    assert "Plan (min-tco, proven optimal)" not in result.out
    result = gpusolve("plan", EXAMPLE, "--format", "json", "-o", str(out_file))
    assert result.code == 130
    assert json.loads(result.out)["status"] == "interrupted"
    assert out_file.read_text() == "previous plan\n"
    assert "left as it was" in result.err


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_interrupt_state_does_not_leak_into_the_next_run(gpusolve: Any) -> None:
    interrupt.request_stop()
    result = gpusolve("plan", "-q", EXAMPLE)
    assert result.code == 0, result.err
    assert "proven optimal" in result.out


def test_ctrl_c_while_the_command_is_still_solving_keeps_the_plan(
    gpusolve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop arrives after the plan's own solve and before the
    alternatives' solves (--top-k): those searches see it and return at once, the plan
    found so far is printed marked, exit 130."""
    import gpusolve.analyses.topk as topk

    real = topk.alternatives
    seen: list[bool] = []

    def ctrl_c_then_search(*args: Any, **kwargs: Any) -> Any:
        interrupt.request_stop()
        began = time.monotonic()
        alternatives = real(*args, **kwargs)
        seen.append(time.monotonic() - began < PROMPT_S)
        return alternatives

    monkeypatch.setattr(topk, "alternatives", ctrl_c_then_search)
    result = gpusolve("plan", EXAMPLE, "--top-k", "3", "--format", "json")
    assert seen == [True]
    assert result.code == 130, result.err
    plan = json.loads(result.out)
    assert plan["status"] == "interrupted" and plan["deployments"]
    assert plan["solver"]["proven_optimal"] is False


def test_a_stop_request_reaches_the_scenario_solver() -> None:
    """The two-stage (scenarios:) solves watch the stop request like the plan's own: after a
    Ctrl-C a search that would run its whole limit returns at once."""
    import random

    from ortools.sat.python import cp_model

    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.optimize.twostage import solve as twostage

    rng = random.Random(7)  # a 60-item knapsack with a tight parity side: slow to prove
    model = cp_model.CpModel()
    xs = [model.new_bool_var(f"x{i}") for i in range(60)]
    weights = [rng.randint(10_000, 99_999) for _ in xs]
    model.add(sum(w * x for w, x in zip(weights, xs, strict=True)) <= sum(weights) // 2)
    model.maximize(sum((w + rng.randint(0, 9)) * x for w, x in zip(weights, xs, strict=True)))
    solver = twostage._solver(SolveConfig(time_limit_s=20, workers=1), 0.0)
    threading.Timer(0.5, interrupt.request_stop).start()  # Ctrl-C half a second in
    began = time.monotonic()
    solver.solve(model)
    assert time.monotonic() - began < 5
    # A search that starts after the stop request (the next stage) gets no time at all.
    later = twostage._solver(SolveConfig(time_limit_s=20, workers=1), 0.0)
    began = time.monotonic()
    later.solve(model)
    assert time.monotonic() - began < 2
    interrupt.reset()
