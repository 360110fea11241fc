"""The shipped examples planned once per test process, for the test files that read the
same plan: `solved` as the library makes it, `plan_json` as `plan -q EXAMPLE --format json`
prints it. Both solve with one CP-SAT worker, a work limit and a seed (the command's
defaults for `plan_json`), so a plan shared between tests is the plan each would have made;
the objects are frozen and the JSON is text, so no test can change what another reads.
A process keeps its own copies: under xdist, files on the same worker share them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from tests.support.cli import run_cli

from gpusolve.load.data import data_dir
from gpusolve.optimize.ir import SolveConfig
from gpusolve.plan import make_plan
from gpusolve.plan.inputs import prepare_run
from gpusolve.plan.solved import PlanOptions, Solved

CONFIG = SolveConfig(time_limit_s=600, work_limit=60, workers=1, seed=1)


@cache
def solved(example: Path) -> Solved:
    """The example's plan with the shipped catalogue, under `CONFIG`."""
    run = prepare_run(example, (data_dir("catalog"),), ())
    return make_plan(run, PlanOptions(config=CONFIG))


@cache
def plan_json(example: Path) -> tuple[int, str]:
    """`plan -q EXAMPLE --format json`: its exit code and what it printed."""
    return run_cli("plan", "-q", str(example), "--format", "json")
