"""A first plan for the search: the best plan over a small set of promising choices.

Why: CP-SAT's own first solutions on these models are poor (about twice the optimum),
while the proof, given the optimum as a hint, is often quick. So stage 1 starts from the
best plan in which each workload takes one of:

* its standalone-cheapest choice (what a spreadsheet does);
* its `Tuning.fallback_choices` standalone-cheapest choices and every rental, so that a
  plan exists when the standalone choices break a shared requirement;
* any choice on a (SKU, site) pair the LP relaxation's solution uses (`pool_choices`,
  `relaxation.py`): the LP sees which pairs the whole fleet should share.

One CP-SAT solve over that set (every other choice fixed to 0; the caller solves the LP
and passes it in) gives the hint. The hint changes where the search starts, never what it
proves: the solve stays exact. When the restricted set has no plan, the search starts
unhinted. The measurements are in `benchmarks/README.md`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from ortools.sat.python import cp_model

from gpusolve.optimize import interrupt
from gpusolve.optimize.builder import Var
from gpusolve.optimize.ir import Instance, OwnedOption, Placement
from gpusolve.optimize.model import Built
from gpusolve.optimize.patterns import racks_alone
from gpusolve.optimize.tuning import DEFAULT, Tuning

_LP_ZERO = 1e-6


def standalone_owned(instance: Instance, option: OwnedOption, placement: Placement) -> int | None:
    """Whole-horizon cost of an owned option at one site as if nothing else were bought:
    its servers, the racks they need on their own, the site's bandwidth and penalties.
    None when the site cannot host it."""
    sku = instance.skus[option.sku]
    site = instance.sites[placement.site]
    racks = racks_alone(sku, site, option.servers)
    if racks is None or site.cooling not in sku.cooling or racks > site.racks_available:
        return None
    monthly = option.servers * site.energy_month[sku.id] + racks * site.rack_rent_month
    monthly += site.bandwidth_month
    extra_mbps = max(0, option.bandwidth_mbps - site.bandwidth_mbps) * site.extra_mbps_cost
    total = option.servers * (sku.capex - sku.residual) + instance.horizon_months * monthly
    total += extra_mbps + placement.busy_energy + site.setup_fee
    total += racks * site.rack_rent_month * max(0, site.rent_months - instance.horizon_months)
    total += option.rent + placement.bridge
    return total + option.penalty + option.burst_penalty + placement.penalty


def priced_choices(built: Built) -> dict[str, list[tuple[int, int, Var]]]:
    """Each workload's choices as (standalone cost, rank, variable), in input order: an
    owned choice at `standalone_owned`, a rental at its price and penalty. Choices a site
    cannot host, and workloads without a priceable choice, are missing."""
    priced: dict[str, list[tuple[int, int, Var]]] = {}
    for owned in built.owned:
        cost = standalone_owned(built.instance, owned.option, owned.placement)
        if cost is not None:
            priced.setdefault(owned.option.workload, []).append((cost, owned.rank, owned.var))
    for cloud in built.cloud:
        cost = cloud.option.cost_total + cloud.option.penalty
        priced.setdefault(cloud.option.workload, []).append((cost, cloud.rank, cloud.var))
    return priced


def ranked_choices(built: Built) -> dict[str, list[Var]]:
    """Each workload's choice variables, standalone-cheapest first (input order on ties).

    Workloads without a priceable choice are missing."""
    return {
        workload: [var for _, _, var in sorted(items, key=lambda item: item[:2])]
        for workload, items in priced_choices(built).items()
    }


def standalone_choices(built: Built) -> list[Var]:
    """Each workload's standalone-cheapest choice variable among those in the model."""
    return [choices[0] for choices in ranked_choices(built).values()]


def fallback_choices(
    built: Built, ranked: dict[str, list[Var]], count: int = DEFAULT.fallback_choices
) -> list[Var]:
    """Each workload's `count` (`Tuning.fallback_choices`, at least 1) standalone-cheapest
    choices and every rental. Part of every restricted set, so that it has a plan when the
    standalone choices break a shared requirement (renting moves spend from the capex cap
    to the monthly one and needs no racks)."""
    rentals = {cloud.var.index for cloud in built.cloud}
    allowed: list[Var] = []
    for choices in ranked.values():
        allowed += choices[:count]
        allowed += [var for var in choices[count:] if var.index in rentals]
    return allowed


def complete(
    built: Built, allowed: Iterable[Var], objective: cp_model.LinearExprT, time_s: float
) -> dict[int, int]:
    """The cheapest full assignment in which every workload takes one of the `allowed`
    choices, by proto index; empty when there is none (a shared requirement breaks) or
    none is found within `time_s`."""
    model = built.model.clone()
    keep = {var.index for var in allowed}
    built.close(model, (var.index for var in built.choice_vars() if var.index not in keep))
    model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(time_s, 0.001)
    interrupt.watch(solver, announce=False)  # Ctrl-C / SIGTERM stops this search
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {}
    return {var.index: int(solver.value(var)) for var in built.all_vars()}


def pool_choices(built: Built, support: Collection[int]) -> list[Var]:
    """Every owned choice on a (SKU, site) pair that some choice in `support` uses, and the
    rentals in `support`.

    Plans save by sharing: a night job rides on a day service's servers, two services fill
    one rack type at one site. The LP relaxation finds the pairs worth sharing but prices
    racks fractionally, so it often gives a workload a different SKU or server count on
    those pairs than the optimum does; opening every workload's options on the pairs lets
    the restricted solve make the sharing exact.
    """
    pairs = {
        (owned.option.sku, owned.placement.site)
        for owned in built.owned
        if owned.var.index in support
    }
    chosen = [o.var for o in built.owned if (o.option.sku, o.placement.site) in pairs]
    return chosen + [c.var for c in built.cloud if c.var.index in support]


def warm_hint(
    built: Built,
    objective: cp_model.LinearExprT,
    time_s: float,
    lp_values: Sequence[float] | None = None,
    tuning: Tuning = DEFAULT,
) -> dict[int, int]:
    """A complete hint within `time_s`: the best plan in which each workload takes its
    standalone-cheapest choice, one of the fallback choices, or (given the LP relaxation's
    solution, `relaxation.Relaxation.solve`) any choice on the (SKU, site) pairs it uses; {} when
    there is none or the model is too small to need one (`wanted`)."""
    if not wanted(built, tuning):
        return {}
    allowed = candidates(built, lp_values, tuning)
    return complete(built, allowed, objective, time_s) if allowed else {}


def candidates(
    built: Built, lp_values: Sequence[float] | None = None, tuning: Tuning = DEFAULT
) -> list[Var]:
    """The restricted set: each workload's fallback choices (`fallback_choices`) and, given
    the LP relaxation's solution, every choice on the (SKU, site) pairs it or a standalone
    choice uses (`pool_choices`). Empty when some workload has no priceable choice."""
    ranked = ranked_choices(built)
    if len(ranked) < len(built.instance.workloads):
        return []
    # The fallback set holds each workload's standalone-cheapest choice (its first).
    allowed = fallback_choices(built, ranked, tuning.fallback_choices)
    if lp_values is not None:
        support = {choices[0].index for choices in ranked.values()}
        support |= {var.index for var in built.choice_vars() if lp_values[var.index] > _LP_ZERO}
        allowed += pool_choices(built, support)
    return allowed


def wanted(built: Built, tuning: Tuning = DEFAULT) -> bool:
    """Whether the model is large enough for the warm start to pay
    (`Tuning.warm_min_choices`)."""
    return built.stats["choice_vars"] >= tuning.warm_min_choices
