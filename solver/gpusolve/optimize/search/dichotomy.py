"""A bound above the LP's for the largest models: one branch of a branch-and-bound, on the
workload the LP relaxation splits most.

Why: on the largest models the LP optimum is nearly integral, yet it can sit above a
percent below the best plan because of one split workload (a binding capex cap: the LP
buys part of a fleet and rents the rest), and the core search cannot lift its bound past
it, since every plan outside a core is bounded by the LP's reduced costs.

Every plan runs such a workload either in the group (one site, or the cloud) holding most
of its LP mass or elsewhere, so the smaller of the two LP bounds, one with the workload's
other choices fixed to 0 and one with that group's, bounds every plan. When the heaviest
group's half lifts the bound by less than `Tuning.dichotomy_min_gain` the other half is
not solved. Branching deeper, or on a relaxed site's rack count, paid little
(`benchmarks/README.md`).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpusolve.optimize.model import Built
from gpusolve.optimize.tuning import DEFAULT

if TYPE_CHECKING:
    # Only the types: the module imports OR-Tools' linear solver (35 ms at start-up).
    from gpusolve.optimize.search.relaxation import LpSolution, Relaxation

# LP mass below this counts as 0, above 1 minus it as 1 (GLOP's tolerances are ~1e-9).
_ZERO = 1e-6

Group = str | None  # a site id; None for the cloud


def groups(built: Built) -> dict[str, dict[Group, list[int]]]:
    """Each workload's choice variables (proto indices) by where they run."""
    out: dict[str, dict[Group, list[int]]] = defaultdict(lambda: defaultdict(list))
    for owned in built.owned:
        out[owned.option.workload][owned.placement.site].append(owned.var.index)
    for cloud in built.cloud:
        out[cloud.option.workload][None].append(cloud.var.index)
    return out


def split(built: Built, values: Sequence[float]) -> tuple[list[int], list[int]] | None:
    """The choices of the workload whose heaviest group holds the least LP mass, as (the
    heaviest group's, every other group's); None when no workload is split across groups.
    Ties go to the workload listed first."""
    best: tuple[float, list[int], list[int]] | None = None
    by_workload = groups(built)
    for workload in built.instance.workloads:
        by_group = by_workload.get(workload, {})
        mass = {group: sum(values[i] for i in indices) for group, indices in by_group.items()}
        if not mass:
            continue
        heaviest = max(mass, key=lambda group: mass[group])
        if mass[heaviest] >= 1 - _ZERO:
            continue
        if best is None or mass[heaviest] < best[0]:
            others = [i for group, ids in by_group.items() if group != heaviest for i in ids]
            best = (mass[heaviest], by_group[heaviest], others)
    return None if best is None else (best[1], best[2])


def bound(
    relaxation: Relaxation,
    built: Built,
    lp: LpSolution,
    time_s: float,
    min_gain: float = DEFAULT.dichotomy_min_gain,
) -> float | None:
    """A bound on every plan above the LP's: the weaker of the two halves' LP bounds. None
    when the LP splits no workload, when the heaviest group's half lifts the bound by less
    than `min_gain` (`Tuning.dichotomy_min_gain`; the other half is then not solved: the
    weaker of the two cannot do better), or when a half's LP has no optimum within the
    time (an infeasible half would bound nothing without a certificate)."""
    halves = split(built, lp.values)
    if halves is None:
        return None
    inside, outside = halves
    deadline = time.perf_counter() + time_s
    weakest = math.inf
    # The heaviest group's half first: the LP leans that way, so it is the likelier to
    # stay near the LP's bound.
    for closed in (outside, inside):
        half = relaxation.solve(deadline - time.perf_counter(), closed)
        if half is None or half.bound < lp.bound + min_gain * abs(lp.bound):
            return None
        weakest = min(weakest, half.bound)
    return weakest
