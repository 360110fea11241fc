"""A long solve's progress on a terminal (`runs/progress.py`): drawn at once and at least
every 2 s while the search runs, the stage, the best plan and its gap; nothing on a pipe
or with -q. Time is simulated: no test here depends on the machine's speed."""

from __future__ import annotations

import contextlib
import io
import itertools
from pathlib import Path

import pytest
from tests.support.phased import CHAT_NORTH, QUARTERS

from gpusolve.cli import main
from gpusolve.runs import progress as module
from gpusolve.runs.progress import SolveProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    return now


def _draws(text: str) -> list[str]:
    """What each redraw showed (tqdm separates redraws with a carriage return)."""
    return [part.strip() for part in text.split("\r") if "gpusolve:" in part]


def test_the_bar_shows_the_stage_the_best_plan_and_its_gap_at_least_every_two_seconds(
    monkeypatch: pytest.MonkeyPatch, clock: list[float]
) -> None:
    screen = Terminal()
    monkeypatch.setattr(module.sys, "stderr", screen)
    shown = SolveProgress(True, "CNY")
    shown.watch("the schedule", None, None)
    created = len(_draws(screen.getvalue()))  # tqdm's frame on creation
    ticks: list[int] = []
    for step in range(100):  # 5 s of the waiting thread's 50 ms ticks
        clock[0] = 1000.0 + 0.05 * step
        if step == 40:
            shown.watch("the schedule", 4_365_046, 3_928_541)
        before = len(_draws(screen.getvalue()))
        shown.tick()
        if len(_draws(screen.getvalue())) > before:
            ticks.append(step)
    shown.close()
    draws = _draws(screen.getvalue())[created:]
    assert ticks[0] == 0  # at once
    assert max(b - a for a, b in itertools.pairwise(ticks)) * 0.05 <= 2.0
    assert "the schedule" in draws[0] and "no plan yet" in draws[0]
    # (4,365,046 - 3,928,541) / 4,365,046 = 10.0 %
    assert any("best 4,365,046 CNY, gap 10.0%" in d for d in draws)


def test_nothing_is_drawn_off_a_terminal_or_when_quiet(
    monkeypatch: pytest.MonkeyPatch, clock: list[float]
) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr(module.sys, "stderr", pipe)
    for enabled in (True, False):
        shown = SolveProgress(enabled, "CNY")
        shown.watch("the schedule", 10, 5)
        shown.tick()
        shown.close()
    monkeypatch.setattr(module.sys, "stderr", Terminal())
    quiet = SolveProgress(False, "CNY")
    quiet.tick()
    assert pipe.getvalue() == "" and quiet.bar is None


def test_a_schedule_on_a_pipe_prints_no_bar(tmp_path: Path) -> None:
    reqs = tmp_path / "chat.yaml"
    reqs.write_text(CHAT_NORTH + QUARTERS, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(["plan", str(reqs)])  # exit 0: no SystemExit
    assert "Purchase schedule" in out.getvalue()
    assert "gpusolve: the schedule [" not in err.getvalue()
    assert "solving the schedule" in err.getvalue()  # the stage is still said, as a line
