"""Top-k distinct plans by re-solving with no-good cuts on the business key.

Two plans are "different" when some workload runs on a different server SKU (or cloud
offer) or at a different site: the key a buyer compares. Options of one workload that
differ only in parallelism share a key, and rack packings never enter it, so packing
symmetry cannot produce duplicates (enumerating solutions would, cpsat-notes §3.1).

Each round solves the base model's clone with all cuts so far (the cached base model is
never modified), hinted with the previous plan, which CP-SAT repairs after the cut: each
answer is the best plan that differs from all earlier ones.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from dataclasses import dataclass

from ortools.sat.python import cp_model

from gpusolve.optimize.builder import BuildOptions, Var
from gpusolve.optimize.ir import Instance, Solution, SolveConfig
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.solve import Outcome, solve_built

BusinessKey = tuple[str, str, str]  # (workload, sku or cloud offer, site or "")


@dataclass(frozen=True)
class Alternative:
    solution: Solution
    # How much worse than the best on the primary objective (>= 0); under max-throughput
    # in score units (`costs.throughput_scores`), not tokens/s.
    objective_delta: int
    cost_delta: int  # objective TCO (TCO + penalties) minus the best plan's
    tco_delta: int = 0  # money: TCO minus the best plan's (may be negative)
    penalties_delta: int = 0  # soft-rule penalties minus the best plan's (may be negative)


def key_groups(built: Built) -> dict[BusinessKey, list[Var]]:
    """The choice Bools behind each business key."""
    groups: dict[BusinessKey, list[Var]] = defaultdict(list)
    for o in built.owned:
        groups[(o.option.workload, o.option.sku, o.placement.site)].append(o.var)
    for c in built.cloud:
        groups[(c.option.workload, c.option.offer, "")].append(c.var)
    return dict(groups)


def plan_key(built: Built, values: dict[int, int]) -> tuple[BusinessKey, ...]:
    return tuple(
        sorted(
            key
            for key, vars_ in key_groups(built).items()
            if any(values.get(v.index, 0) for v in vars_)
        )
    )


def no_good(
    model: cp_model.CpModel, groups: dict[BusinessKey, list[Var]], plan: tuple[BusinessKey, ...]
) -> None:
    """At least one workload leaves its key: the chosen groups' Bools sum below the
    number of workloads (exactly-one makes each group sum 0 or 1)."""
    chosen = [v for key in plan for v in groups[key]]
    model.add(cp_model.LinearExpr.sum(chosen) <= len(plan) - 1)


def alternatives(
    instance: Instance,
    k: int,
    config: SolveConfig | None = None,
    options: BuildOptions | None = None,
) -> list[Alternative]:
    """The best plan followed by up to k-1 next-best distinct plans, in objective order.

    The list is empty when no plan exists; it ends early when no further distinct plan
    exists or the time limit (shared by all rounds) runs out.
    """
    config = config or SolveConfig()
    start = time.perf_counter()
    # Every option stays: a plan on a dearer copy of a server is still a distinct plan.
    options = dataclasses.replace(options or BuildOptions(), prune_across=False)
    built = build(instance, options)
    groups = key_groups(built)
    cuts: list[tuple[BusinessKey, ...]] = []

    def prepare(model: cp_model.CpModel) -> None:
        for plan in cuts:
            no_good(model, groups, plan)

    out: list[Alternative] = []
    best: Outcome | None = None
    hint: dict[int, int] | None = None  # the first round starts from the warm start
    for _ in range(k):
        if time.perf_counter() - start >= config.time_limit_s:
            break
        remaining = config.time_limit_s - (time.perf_counter() - start)
        round_config = dataclasses.replace(config, time_limit_s=remaining)
        outcome = solve_built(built, round_config, prepare=prepare, hint=hint)
        if outcome.solution.status not in ("optimal", "feasible"):
            break
        if outcome.solution.fallback is not None:
            break  # the search found nothing in time: a fallback is no next-best plan
        best = best or outcome
        out.append(_alternative(instance, best.solution, outcome.solution))
        cuts.append(plan_key(built, outcome.values))
        hint = outcome.values
    return out


def _alternative(instance: Instance, best: Solution, alt: Solution) -> Alternative:
    assert best.objective_value is not None and alt.objective_value is not None
    assert best.costs is not None and alt.costs is not None
    delta = alt.objective_value - best.objective_value
    if instance.objective == "max-throughput":
        delta = -delta
    return Alternative(
        alt,
        delta,
        alt.costs.objective_tco - best.costs.objective_tco,
        alt.costs.tco - best.costs.tco,
        alt.costs.penalties - best.costs.penalties,
    )
