"""`--top-k N`: the next-best distinct plans, each with its own itemised cost and its
deltas to the plan (`explain/compare.py`), and what differs from it in words."""

from __future__ import annotations

from collections.abc import Callable

from gpusolve.candidates.records import Candidates
from gpusolve.explain import parts
from gpusolve.models.plan import Alternative
from gpusolve.models.schedule import ScheduleAlternative
from gpusolve.optimize import ir
from gpusolve.optimize.phased.ir import PhasedSolution
from gpusolve.plan.phased.inputs import PhasedInputs
from gpusolve.plan.phased.schedule import delta, purchases_over
from gpusolve.plan.phased.schedule import difference as schedule_difference
from gpusolve.plan.solved import Outcome, Phased, Single, Solved

Progress = Callable[[str], None]


def run(solved: Solved, progress: Progress = lambda _: None) -> Outcome:
    """The plan with its `alternatives`: plans of one instance, or schedules (a two-stage
    plan has none, and the command refuses --top-k with a scenarios: block)."""
    k = solved.options.top_k
    found = solved.solution
    if not k or found is None:
        return solved.plan
    if isinstance(found, Phased):
        progress(f"finding {k} alternative schedule(s)")
        schedules = schedule_top_k(found.inputs, found.best, k, solved.options.config)
        return solved.plan.model_copy(update={"alternatives": schedules})
    if not isinstance(found, Single) or found.solution is None:
        return solved.plan
    progress(f"finding {k} alternative plan(s)")
    return solved.plan.model_copy(update={"alternatives": alternatives(solved, found)})


def alternatives(solved: Solved, single: Single) -> list[Alternative]:
    from gpusolve.optimize.alternatives import alternatives as next_best

    assert single.solution is not None
    solution, cand = single.solution, single.prepared.cand
    reqs, catalog = single.prepared.reqs, single.prepared.catalog
    found = next_best(cand.instance, solved.options.top_k + 1, solved.options.config)
    chosen_cost = parts.cost(solution, cand, reqs, catalog)
    assert chosen_cost is not None  # only called with a plan
    chosen = (chosen_cost, parts.deployments(solution, cand, reqs))
    return [
        parts.alternative(
            rank,
            alt.solution,
            difference(solution, alt.solution, cand),
            cand,
            reqs,
            catalog,
            chosen,
        )
        for rank, alt in enumerate(found[1:], 1)
    ]


def difference(best: ir.Solution, alt: ir.Solution, cand: Candidates) -> str:
    """What `alt` does differently from `best`, per workload, in words."""
    mine = {c.workload: c for c in best.choices}
    changed = []
    for c in alt.choices:
        b = mine.get(c.workload)
        if b is None or (b.option, b.site) == (c.option, c.site):
            continue
        meta = cand.meta[c.option]
        what = meta.server or f"cloud {meta.cloud_offer}"
        changed.append(
            f"{c.workload} on {meta.nodes} x {what}" + (f" at {c.site}" if c.site else "")
        )
    return "; ".join(changed) or "same hardware, different packing"


def schedule_top_k(
    phased_inputs: PhasedInputs, best: PhasedSolution, k: int, config: ir.SolveConfig
) -> list[ScheduleAlternative]:
    """The next k distinct schedules after `best` (distinct as `phased_alternatives.py`
    defines it), each with its TCO and delta to the schedule."""
    from gpusolve.optimize.phased.alternatives import alternatives

    if not k or best.objective_value is None:
        return []
    found = alternatives(phased_inputs.instance, k, config)
    return [
        ScheduleAlternative(
            rank=rank,
            status="timeout" if s.status not in ("optimal", "feasible") else s.status,
            tco=s.tco,
            penalties=s.penalties,
            delta=delta(s.objective_value, best.objective_value),
            tco_delta=delta(s.tco, best.tco),
            bought=purchases_over(s),
            difference=schedule_difference(best, s),
        )
        for rank, s in enumerate(found[1:], 1)
    ]
