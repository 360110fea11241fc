"""The spreadsheet baseline: each workload alone takes its cheapest option.

A planner with a spreadsheet prices every option of a workload as if it were the only
thing bought: its servers (capex and energy over the horizon), the racks those servers
need on their own at that site, the site's bandwidth, and its penalties; or the cloud
rental. Each workload takes its cheapest line. The union of those choices is then priced
honestly: the choices are fixed and the optimiser packs them exactly (servers shared by
day and night work, racks shared between workloads), so the comparison with the joint
optimum isolates the value of deciding jointly, not a packing artefact.

When the union breaks a budget or a site's rack availability (the spreadsheet does not
see them), it is priced with those requirements relaxed and reported as infeasible.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.ir import (
    CloudOption,
    Instance,
    OwnedOption,
    Solution,
    SolveConfig,
)
from gpusolve.optimize.search.warmstart import standalone_owned
from gpusolve.optimize.solve import solve


@dataclass(frozen=True)
class Greedy:
    objective: int | None  # the union's cost (TCO + penalties), packed exactly
    feasible: bool  # within budgets and rack availability
    relaxed: tuple[str, ...]  # requirements that had to be relaxed to price it
    status: str


def cheapest(instance: Instance, workload: str) -> OwnedOption | CloudOption | None:
    """The workload's cheapest standalone choice (owned options carry one placement)."""
    best: tuple[int, OwnedOption | CloudOption] | None = None
    for o in instance.owned:
        if o.workload != workload or o.violates:
            continue
        for p in o.placements:
            cost = standalone_owned(instance, o, p)
            if cost is not None and not p.violates and (best is None or cost < best[0]):
                best = (cost, replace(o, placements=(p,)))
    for c in instance.cloud:
        if c.workload == workload and not c.violates:
            cost = c.cost_total + c.penalty
            if best is None or cost < best[0]:
                best = (cost, c)
    return None if best is None else best[1]


def greedy_instance(instance: Instance) -> Instance:
    """The instance restricted to each workload's standalone-cheapest choice."""
    owned: list[OwnedOption] = []
    cloud: list[CloudOption] = []
    for w in instance.workloads:
        choice = cheapest(instance, w)
        if isinstance(choice, OwnedOption):
            owned.append(choice)
        elif isinstance(choice, CloudOption):
            cloud.append(choice)
    return replace(instance, owned=tuple(owned), cloud=tuple(cloud))


def greedy(instance: Instance, time_limit: float = 60.0) -> Greedy:
    """Price the spreadsheet plan with an exact packing (CP-SAT, one worker)."""
    restricted = greedy_instance(instance)
    config = SolveConfig(time_limit_s=time_limit, workers=1)
    racks = tuple(f"racks:{s}" for s in sorted(instance.sites))
    attempts: list[tuple[str, ...]] = [(), ("capex", "monthly"), ("capex", "monthly", *racks)]
    status = "infeasible"
    for relax in attempts:
        solution = solve(restricted, config, BuildOptions(relax=frozenset(relax)))
        status = solution.status
        if solution.status in ("optimal", "feasible"):
            broken = violated(instance, solution) if relax else ()
            return Greedy(solution.objective_value, not relax, broken, status)
    return Greedy(None, False, attempts[-1], status)


def violated(instance: Instance, solution: Solution) -> tuple[str, ...]:
    """Budgets and rack availabilities a (relaxed) plan breaks."""
    costs = solution.costs
    out: list[str] = []
    if costs is not None and instance.capex_max is not None and costs.capex > instance.capex_max:
        out.append("capex")
    if costs is not None and instance.monthly_max is not None:
        spend = costs.rack_rent + costs.energy + costs.bandwidth + costs.cloud
        if spend > instance.horizon_months * instance.monthly_max:
            out.append("monthly")
    racks: dict[str, int] = {}
    for (site, _), count in solution.racks.items():
        racks[site] = racks.get(site, 0) + count
    out += [f"racks:{s}" for s, n in sorted(racks.items()) if n > instance.sites[s].racks_available]
    return tuple(out)
