"""Payback: the plan against the cheapest plan that buys nothing.

The all-rental plan is not a hand estimate: it is the plan's own instance (the same
candidates, deadlines, budgets and regions) solved again with no server model buyable
and the soft-rule penalties set to zero, minimising TCO, so "cheapest" means the lowest
TCO of any plan that buys no server. Servers already owned (an inventory) stay usable:
the question is whether the purchase pays back, not whether the stock does. Its cost
lines are laid out by month the same way as the plan's (`explain/payments.py`) and the
payback month is the first from which the plan's cumulative spend stays at or below it.
A plan that buys nothing is its own all-rental plan: nothing is solved. A plan hedged over
scenarios is compared in the scenario it shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gpusolve.candidates.prepare import Prepared
from gpusolve.explain import parts
from gpusolve.explain.payments import (
    contracted,
    credit_total,
    payback_month,
    payment_months,
    spend,
)
from gpusolve.models.plan import Cost, Deployment, Payback, Plan
from gpusolve.optimize import ir
from gpusolve.plan.assemble import runs_of
from gpusolve.plan.solved import Hedged, Outcome, Phased, Solved

Progress = Callable[[str], None]

BASIS = (
    "the plan's own candidates solved again with no server bought and soft-rule penalties "
    "at zero, minimising TCO"
)
WITH_STOCK = "; the servers already owned stay in use"


def run(solved: Solved, progress: Progress = lambda _: None) -> Outcome:
    """The plan with its `payback` (unchanged without a plan). A schedule is unchanged: it
    carries its rent-as-you-go baseline, priced by the same model, in place of a payback."""
    solution = solved.solution
    if solution is None or isinstance(solution, Phased):
        return solved.plan
    plan = solved.single_plan
    if plan.cost is None:
        return plan
    prepared = solution.where.prepared if isinstance(solution, Hedged) else solution.prepared
    if plan.cost.capex <= 0:
        progress("payback: solving the cheapest plan that buys instead of renting")
        bought = buying(prepared, solved.options.config)
        return plan.model_copy(update={"payback": bought})
    progress("payback: solving the cheapest plan that rents everything")
    return plan.model_copy(update={"payback": compare(plan, prepared, solved.options.config)})


def nothing_bought() -> Payback:
    return Payback(
        basis="the plan buys nothing: it is itself an all-rental plan",
        rental_tco=None,
        summary="nothing to pay back: the plan buys no hardware",
    )


def buying_instance(instance: ir.Instance) -> ir.Instance:
    """`instance` with no cloud offer (every workload on servers bought or owned),
    penalties at zero, minimising TCO: the all-rental plan's mirror."""
    owned = tuple(
        replace(o, penalty=0, placements=tuple(replace(p, penalty=0) for p in o.placements))
        for o in instance.owned
    )
    return replace(instance, owned=owned, cloud=(), objective="min-tco")


def buying(prepared: Prepared, config: ir.SolveConfig) -> Payback:
    """A plan that buys nothing against the cheapest plan that rents nothing."""
    from gpusolve.optimize.solve import solve  # ortools only on this path

    cand, reqs, catalog = prepared.cand, prepared.reqs, prepared.catalog
    instance = buying_instance(cand.instance)
    base = nothing_bought()
    unowned = sorted(set(instance.workloads) - {o.workload for o in instance.owned})
    if unowned:
        why = f"no server the rules allow can run {', '.join(unowned)}"
        return base.model_copy(update={"buying_note": why})
    found = solve(instance, config)
    note = ""
    if found.status == "infeasible" and budgeted(instance):
        # Over a budget is the reason it loses: priced without the caps, and said so.
        found = solve(replace(instance, capex_max=None, monthly_max=None, total_max=None), config)
        note = "over the budget"
    if found.costs is None or found.status not in ("optimal", "feasible"):
        why = (
            "buying alone cannot meet the requirements (racks, power or deadlines)"
            if found.status == "infeasible"
            else "no buying plan found within the time limit"
        )
        return base.model_copy(update={"buying_note": why})
    bought_cost = parts.cost(found, cand, reqs, catalog)
    assert bought_cost is not None
    deployments = parts.deployments(found, cand, reqs)
    return base.model_copy(
        update={
            "buying_tco": spend(bought_cost),
            "buying_capex": bought_cost.capex,
            "buying_hardware": [f"{d.workload}: {words(d, '')}" for d in deployments],
            "buying_note": over_budget(instance, bought_cost) if note else "",
        }
    )


def budgeted(instance: ir.Instance) -> bool:
    caps = (instance.capex_max, instance.monthly_max, instance.total_max)
    return any(c is not None for c in caps)


def over_budget(instance: ir.Instance, cost: Cost) -> str:
    """The caps the cheapest buying plan, priced without them, breaks, in words."""
    spent = [
        (instance.capex_max, cost.capex, "capex"),
        (instance.monthly_max, cost.monthly_opex, "monthly spend"),
        (instance.total_max, cost.tco, "TCO"),
    ]
    broken = [
        f"its {name} {value:,.0f} is over the cap of {cap:,}"
        for cap, value, name in spent
        if cap is not None and value > cap
    ]
    return "; ".join(broken) or "it breaks a budget cap (priced without the caps)"


def rental_instance(instance: ir.Instance) -> ir.Instance:
    """`instance` with no server model buyable (the stock still usable), penalties at
    zero, minimising TCO."""
    held = {s.sku for s in instance.stock}
    owned = tuple(
        replace(o, penalty=0, placements=tuple(replace(p, penalty=0) for p in o.placements))
        for o in instance.owned
        if o.sku in held
    )
    cloud = tuple(replace(o, penalty=0) for o in instance.cloud)
    skus = {k: replace(s, buyable=False) for k, s in instance.skus.items()}
    return replace(instance, skus=skus, owned=owned, cloud=cloud, objective="min-tco")


def compare(plan: Plan, prepared: Prepared, config: ir.SolveConfig) -> Payback:
    from gpusolve.optimize.solve import solve  # ortools only on this path

    assert plan.cost is not None
    cand, reqs, catalog = prepared.cand, prepared.reqs, prepared.catalog
    instance = rental_instance(cand.instance)
    served = {o.workload for o in instance.cloud} | {o.workload for o in instance.owned}
    unrentable = sorted(set(instance.workloads) - served)
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
    paid = contracted(plan)  # the alternative keeps the same contracted racks
    rental = [m.total for m in payment_months(rental_cost, deployments, runs_of(reqs), paid)]
    month = payback_month([m.total for m in plan.payments], rental)
    saving = rental_cost.tco - spend(plan.cost)
    return Payback(
        basis=BASIS + (WITH_STOCK if instance.stock else ""),
        rental_tco=rental_cost.tco,
        rental_proven_optimal=found.status == "optimal",
        rental_cloud=rental_cost.breakdown.cloud_rental,
        rental_hardware=[f"{d.workload}: {words(d)}" for d in deployments],
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


def words(d: Deployment, owned: str = " already owned") -> str:
    """What a deployment of an alternative plan uses, as the plan's tables say it (an
    all-rental plan's servers are the stock already owned)."""
    if d.mode == "cloud":
        return f"rent {d.servers} x {d.cloud_offer} ({d.gpus} x {d.card})"
    return f"{d.servers} x {d.server}{owned} at {d.site}"


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
        f"; counting the servers' resale value of {-credit:,.0f} {currency} (not cash) "
        f"buying {verb} {abs(net):,.0f} {currency}"
    )


def summary(month: int | None, saving: float, horizon_months: int, currency: str) -> str:
    if month is None:
        return (
            f"does not pay back within {horizon_months} months: renting instead of buying "
            f"costs {-saving:,.0f} {currency} less over the horizon"
        )
    return (
        f"pays back in month {month}; over {horizon_months} months buying saves "
        f"{saving:,.0f} {currency} against renting instead"
    )
