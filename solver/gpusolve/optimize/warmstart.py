"""A first plan for the search: each workload alone takes its cheapest choice.

CP-SAT's own first solutions on these models are poor: on 20x60x20 instances the
feasibility-jump start costs about twice the optimum and the LNS workers take 5-12 s to
come within 1 % of it, while the proof itself, given the optimum as a hint, takes 1-2 s.
The standalone-cheapest plan (what a spreadsheet does) is within ~5 % of the optimum on
the same instances, and completing it into a full hint is a search over the packing only.

The hint changes where the search starts, never what it proves: the solve stays exact.
When the standalone choices break a shared requirement (a budget, a site's racks), there is
no complete plan to hint and the search starts as before.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ortools.sat.python import cp_model

from gpusolve.optimize.ir import Instance, OwnedOption, Placement
from gpusolve.optimize.model import Built, Var
from gpusolve.optimize.patterns import Shape, max_count

# The completion fixes every choice, so it is propagation plus a small packing search;
# a few hundred ms at 40x120x40. It never takes more than this share of the time limit.
_SHARE = 0.1
# Below this many choice variables CP-SAT's own first plan arrives in milliseconds and the
# completion solve is pure overhead (3x10x5 instances, 10 seeds: solve() against the best
# peer went from 1.09x to 1.21x with it); from 10x30x10 (900-1,600 choices) up it pays.
MIN_CHOICES = 500


def standalone_owned(instance: Instance, option: OwnedOption, placement: Placement) -> int | None:
    """Whole-horizon cost of an owned option at one site as if nothing else were bought:
    its servers, the racks they need on their own, the site's bandwidth and penalties.
    None when the site cannot host it."""
    sku = instance.skus[option.sku]
    site = instance.sites[placement.site]
    per_rack = max_count(Shape(sku.power_w, sku.rack_units), site.rack_w, site.rack_units)
    if per_rack < 1 or site.cooling not in sku.cooling:
        return None
    racks = math.ceil(option.servers / per_rack)
    if racks > site.racks_available:
        return None
    monthly = option.servers * site.energy_month[sku.id] + racks * site.rack_rent_month
    monthly += site.bandwidth_month
    total = option.servers * sku.capex + instance.horizon_months * monthly
    return total + option.penalty + placement.penalty


def standalone_choices(built: Built) -> list[Var]:
    """Each workload's standalone-cheapest choice variable among those in the model."""
    best: dict[str, tuple[int, int, Var]] = {}

    def offer(workload: str, cost: int | None, rank: int, var: Var) -> None:
        if cost is not None and (workload not in best or (cost, rank) < best[workload][:2]):
            best[workload] = (cost, rank, var)

    for owned in built.owned:
        cost = standalone_owned(built.instance, owned.option, owned.placement)
        offer(owned.option.workload, cost, owned.rank, owned.var)
    for cloud in built.cloud:
        offer(cloud.option.workload, cloud.option.cost_total + cloud.option.penalty, 0, cloud.var)
    return [var for _, _, var in best.values()]


def complete(
    built: Built, chosen: Iterable[Var], objective: cp_model.LinearExprT, time_s: float
) -> dict[int, int]:
    """The cheapest full assignment with `chosen` fixed, by proto index; empty when the
    choices cannot be completed (a shared requirement breaks) within `time_s`."""
    model = built.model.clone()
    for var in chosen:
        model.add(var == 1)
    model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(time_s, 0.001)
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return {}
    return {var.index: int(solver.value(var)) for var in built.all_vars()}


def greedy_hint(
    built: Built, objective: cp_model.LinearExprT, time_limit_s: float
) -> dict[int, int]:
    """A complete hint from the standalone-cheapest plan, or {} when there is none or the
    model is too small to need one."""
    if built.stats["choice_vars"] < MIN_CHOICES:
        return {}
    chosen = standalone_choices(built)
    if len(chosen) < len(built.instance.workloads):
        return {}
    return complete(built, chosen, objective, _SHARE * time_limit_s)
