"""One finished plan from a run: `make_plan(run, options) -> Solved`.

The stages of `gpusolve plan` after loading (`inputs.py`): the candidates prepared once
(`candidates/prepare.py`), solved as one instance (`single.py`), as a two-stage model
over a `scenarios:` block (`twostage.py`), or as a purchase schedule over a `periods:`
block (`phased/`), and assembled into a finished Plan (`assemble.py`: market, compliance,
exclusions, sources and bill of materials included, whatever the outcome) or Schedule.
The analyses built on a plan (`analyses/`) take the `Solved` this returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the stages import ortools: not on the path of `plan.inputs`' loaders
    from gpusolve.plan.inputs import Inputs
    from gpusolve.plan.solved import PlanOptions, Solved

Progress = Callable[[str], None]
# A long solve's progress: (stage, incumbent objective or None, best bound or None).
Watch = Callable[[str, int | None, int | None], None]


def make_plan(
    run: Inputs,
    options: PlanOptions,
    progress: Progress = lambda _: None,
    watch: Watch | None = None,
) -> Solved:
    """The cheapest plan for `run` (or the proof, or the reason, that there is none)."""
    from gpusolve.plan.assemble import finish

    if run.reqs.phased:
        from gpusolve.plan.phased.solve import solve_schedule

        return solve_schedule(run, options, progress, watch)
    if run.reqs.scenarios:
        from gpusolve.plan.twostage import solve_hedged

        solved = solve_hedged(run, options, progress)
    else:
        from gpusolve.plan.single import solve_single

        solved = solve_single(run, options, progress)
    return solved.with_plan(finish(run, solved.single_plan))
