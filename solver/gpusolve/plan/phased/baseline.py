"""The best single-period plan, for the schedule's side by side: what `plan` without
`periods:` would buy, priced in the phased model like for like.

"The best single-period plan" here is the ordinary single plan (one decision at month 0)
run on the requirements with the periods removed and each workload at its peak: an
inference workload at its highest period's target tokens/s and concurrency, a training
workload at its highest monthly rate of runs held over the horizon; on the catalogue as it
stands at month 0 (nothing not yet sold, today's prices), within the first fiscal year's
capex budget. Its purchase, bought at month 0 and held for the horizon, is then priced by
the phased model (each period runs on it, renting only where the period is better off
renting), so its TCO compares with the schedule's and the baselines' on the same costs.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from gpusolve.models.periods import Period, active, active_months
from gpusolve.models.requirements import InferenceWorkload, Requirements, Workload
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.phased.ir import PhasedInstance, PhasedSolution
from gpusolve.optimize.phased.solve import solve_phased
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.phased.inputs import for_period, period_catalog, periods_of
from gpusolve.plan.solved import SinglePeriod

NOTE = (
    "the ordinary single plan (no periods; each workload at its peak demand; today's "
    "catalogue and prices) bought at month 0 and held for the horizon, priced here"
)


def _peak(w: Workload, horizon_months: int, periods: tuple[Period, ...]) -> Workload:
    shaped = [
        (p, for_period(w, horizon_months, p))
        for p in periods
        if active(p, w.start_month, w.end_month)
    ]
    if isinstance(w, InferenceWorkload):

        def load(pw: tuple[Period, Workload]) -> tuple[float, float]:
            x = pw[1]
            assert isinstance(x, InferenceWorkload)
            return (x.target_tokens_per_s or 0.0, float(x.concurrency or 0))

        return max(shaped, key=load)[1]

    def rate(pw: tuple[Period, Workload]) -> float:
        p, x = pw
        return x.runs / max(1, active_months(p, w.start_month, w.end_month))

    return max(shaped, key=rate)[1].model_copy(
        update={"runs": max(map(rate, shaped)) * horizon_months}
    )


def peak_requirements(reqs: Requirements) -> Requirements:
    """The requirements of the single plan: no periods, each workload at its peak."""
    periods = periods_of(reqs)
    workloads = [_peak(w, reqs.horizon_months, periods) for w in reqs.workloads]
    limits = [v for v in (reqs.budget.capex_max, *(reqs.budget.capex_by_year or ())[:1]) if v]
    budget = reqs.budget.model_copy(
        update={"capex_by_year": None, "capex_max": min(limits) if limits else None}
    )
    return reqs.model_copy(update={"workloads": workloads, "periods": None, "budget": budget})


def single_period(run: Inputs, pi: PhasedInstance, config: SolveConfig) -> SinglePeriod:
    """The single plan at peak demand and its fleet priced over the periods."""
    from gpusolve.plan.assemble import finish
    from gpusolve.plan.single import solve_single
    from gpusolve.plan.solved import PlanOptions

    single = dataclasses.replace(
        run, reqs=peak_requirements(run.reqs), catalog=period_catalog(run.catalog, 0)
    )
    plan = finish(
        single, solve_single(single, PlanOptions(config=config), lambda _: None).single_plan
    )
    fleet: dict[tuple[str, str], int] = defaultdict(int)
    if plan.cost is not None:
        for item in plan.cost.breakdown.items:
            if item.kind == "servers_capex" and item.site is not None:
                fleet[item.subject, item.site] += int(item.quantity or 0)
    if plan.status not in ("optimal", "feasible"):
        why = f"the single plan at peak demand is {plan.status}"
        return SinglePeriod({}, plan.status, None, PhasedSolution("infeasible", reason=why))
    priced = solve_phased(pi, config, "buy-now", fixed=dict(fleet))
    tco = plan.cost.tco if plan.cost is not None else None
    return SinglePeriod(dict(fleet), plan.status, tco, priced)
