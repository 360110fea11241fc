"""Top-k distinct schedules and schedules with an item forced in, on the phased model.

Two schedules are "different" as two single plans are (`alternatives.py`): by the set of
(workload, server SKU or cloud offer, site) they run, here over all the periods: some
workload runs in some period on hardware or at a site the other never uses for it, or
never runs on what the other does. Purchase timing alone, parallelism and rack packing
never make a schedule different. Each round solves the model again with a no-good cut on
every earlier schedule's set; the time limit is shared by all rounds.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable

from ortools.sat.python import cp_model

from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.phased.ir import PhasedInstance, PhasedSolution
from gpusolve.optimize.phased.model import PhasedVars
from gpusolve.optimize.phased.solve import solve_phased

Key = tuple[str, str, str]  # (workload, server SKU or cloud offer, site or "")
# Whether a choice uses an item: (period, option key, site or None for a rental).
Uses = Callable[[int, str, str | None], bool]


def schedule_key(solution: PhasedSolution) -> tuple[Key, ...]:
    """What a schedule runs where, over all its periods."""
    keys = {
        (c.workload, c.sku or c.offer or c.option, c.site or "")
        for pp in solution.periods
        for c in pp.choices
    }
    return tuple(sorted(keys))


def _groups(pi: PhasedInstance, v: PhasedVars) -> dict[Key, list[cp_model.IntVar]]:
    """The choice Bools behind each key, over all periods."""
    groups: dict[Key, list[cp_model.IntVar]] = defaultdict(list)
    for (p, key, site), x in v.owned.items():
        o = next(o for o in pi.instances[p].owned if o.key == key)
        groups[o.workload, o.sku, site].append(x)
    for (p, key), y in v.cloud.items():
        c = next(c for c in pi.instances[p].cloud if c.key == key)
        groups[c.workload, c.offer, ""].append(y)
    return dict(groups)


def _no_good(
    m: cp_model.CpModel, groups: dict[Key, list[cp_model.IntVar]], seen: tuple[Key, ...]
) -> None:
    """The schedule's set of keys differs from `seen`: a key of it unused, or another used."""
    dropped = []
    for key in seen:
        gone = m.new_bool_var(f"gone[{key}]")
        m.add(cp_model.LinearExpr.sum(groups.get(key, [])) == 0).only_enforce_if(gone)
        dropped.append(gone)
    others = [x for key, xs in groups.items() if key not in seen for x in xs]
    m.add(cp_model.LinearExpr.sum(dropped + others) >= 1)


def alternatives(pi: PhasedInstance, k: int, config: SolveConfig) -> list[PhasedSolution]:
    """The best schedule followed by up to k next-best distinct ones, in objective order;
    shorter when no further distinct schedule exists or the time runs out."""
    start = time.perf_counter()
    seen: list[tuple[Key, ...]] = []
    out: list[PhasedSolution] = []

    def cut(m: cp_model.CpModel, v: PhasedVars) -> None:
        groups = _groups(pi, v)
        for keys in seen:
            _no_good(m, groups, keys)

    for _ in range(k + 1):
        left = config.time_limit_s - (time.perf_counter() - start)
        if left <= 0:
            break
        found = solve_phased(pi, dataclasses.replace(config, time_limit_s=left), restrict=cut)
        if found.status not in ("optimal", "feasible"):
            break
        out.append(found)
        seen.append(schedule_key(found))
    return out


def forced(pi: PhasedInstance, uses: Uses, config: SolveConfig) -> PhasedSolution | None:
    """The cheapest schedule that uses the item in some period; None when no choice of
    any period could use it."""
    hits: list[cp_model.IntVar] = []

    def force(m: cp_model.CpModel, v: PhasedVars) -> None:
        hits.extend(x for (p, key, site), x in v.owned.items() if uses(p, key, site))
        hits.extend(y for (p, key), y in v.cloud.items() if uses(p, key, None))
        m.add(cp_model.LinearExpr.sum(hits) >= 1)

    solution = solve_phased(pi, config, restrict=force)
    return solution if hits else None
