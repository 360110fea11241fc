"""Payback: the plan against the cheapest plan that buys nothing.

The all-rental plan is not a hand estimate: it is the plan's own instance (the same
candidates, deadlines, budgets and regions) solved again with every purchase option
removed and the soft-rule penalties set to zero, minimising TCO, so "cheapest" means the
lowest TCO of any plan that rents everything. Its cost lines are laid out by month the
same way as the plan's (`explain/payments.py`) and the payback month is the first from
which the plan's cumulative spend stays at or below it. A plan that buys nothing is its
own all-rental plan: nothing is solved. A plan hedged over scenarios is compared in the
scenario it shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gpusolve.candidates.prepare import Prepared
from gpusolve.explain import parts
from gpusolve.explain.payments import credit_total, payback_month, payment_months, spend
from gpusolve.models.plan import Payback, Plan
from gpusolve.optimize import ir
from gpusolve.plan.assemble import runs_of
from gpusolve.plan.solved import Hedged, Solved

Progress = Callable[[str], None]

BASIS = (
    "the plan's own candidates solved again with every purchase removed and soft-rule "
    "penalties at zero, minimising TCO"
)


def run(solved: Solved, progress: Progress = lambda _: None) -> Plan:
    """The plan with its `payback` (unchanged without a plan)."""
    plan, solution = solved.plan, solved.solution
    if plan.cost is None or solution is None:
        return plan
    if plan.cost.capex <= 0:
        return plan.model_copy(update={"payback": nothing_bought()})
    prepared = solution.where.prepared if isinstance(solution, Hedged) else solution.prepared
    progress("payback: solving the cheapest plan that rents everything")
    return plan.model_copy(update={"payback": compare(plan, prepared, solved.options.config)})


def nothing_bought() -> Payback:
    return Payback(
        basis="the plan buys nothing: it is itself an all-rental plan",
        rental_tco=None,
        summary="nothing to pay back: the plan buys no hardware",
    )


def rental_instance(instance: ir.Instance) -> ir.Instance:
    """`instance` with no purchase possible, penalties at zero, minimising TCO."""
    cloud = tuple(replace(o, penalty=0) for o in instance.cloud)
    return replace(instance, owned=(), cloud=cloud, objective="min-tco")


def compare(plan: Plan, prepared: Prepared, config: ir.SolveConfig) -> Payback:
    from gpusolve.optimize.solve import solve  # ortools only on this path

    assert plan.cost is not None
    cand, reqs, catalog = prepared.cand, prepared.reqs, prepared.catalog
    instance = rental_instance(cand.instance)
    unrentable = sorted(set(instance.workloads) - {o.workload for o in instance.cloud})
    if unrentable:
        return no_rental(
            f"no cloud offer can run {', '.join(unrentable)}" + first_reason(prepared, unrentable)
        )
    found = solve(instance, config)
    if found.costs is None or found.status not in ("optimal", "feasible"):
        why = (
            "renting alone cannot meet the requirements (cloud instance limits, deadlines "
            "or the monthly budget)"
            if found.status == "infeasible"
            else "no all-rental plan found within the time limit"
        )
        return no_rental(why)
    rental_cost = parts.cost(found, cand, reqs, catalog)
    assert rental_cost is not None
    deployments = parts.deployments(found, cand, reqs)
    rental = [m.total for m in payment_months(rental_cost, deployments, runs_of(reqs))]
    month = payback_month([m.total for m in plan.payments], rental)
    saving = rental_cost.tco - spend(plan.cost)
    return Payback(
        basis=BASIS,
        rental_tco=rental_cost.tco,
        rental_proven_optimal=found.status == "optimal",
        rental_hardware=[
            f"{d.workload}: rent {d.servers} x {d.cloud_offer} ({d.gpus} x {d.card})"
            for d in deployments
        ],
        rental_months=rental,
        payback_month=month,
        saving=saving,
        summary=summary(month, saving, plan.cost.horizon_months, plan.cost.currency)
        + credited(saving, credit_total(plan.cost), plan.cost.currency),
    )


def first_reason(prepared: Prepared, workloads: list[str]) -> str:
    """Why the first cloud offer was refused to the first of `workloads`, for the memo."""
    offers = prepared.catalog.cloud_offers
    for r in prepared.cand.rejections.get(workloads[0], []):
        if r.candidate in offers and r.reasons:
            return f" (e.g. {r.reasons[0]})"
    return ""


def no_rental(reason: str) -> Payback:
    return Payback(basis=BASIS, rental_tco=None, summary=f"no payback to compute: {reason}")


def credited(saving: float, credit: float, currency: str) -> str:
    """The comparison once the plan's credits (residual value: book value, not cash) are
    counted, when there are any."""
    if not credit:
        return ""
    net = saving - credit  # credit <= 0: counting it makes the plan cheaper
    verb = "saves" if net >= 0 else "costs"
    return (
        f"; counting the servers' residual value of {-credit:,.0f} {currency} (book value, "
        f"not cash) buying {verb} {abs(net):,.0f} {currency}"
    )


def summary(month: int | None, saving: float, horizon_months: int, currency: str) -> str:
    if month is None:
        return (
            f"does not pay back within {horizon_months} months: renting everything costs "
            f"{-saving:,.0f} {currency} less over the horizon"
        )
    return (
        f"pays back in month {month}; over {horizon_months} months buying saves "
        f"{saving:,.0f} {currency} against renting everything"
    )
