"""Why no plan exists: the requirements that conflict, and what to relax.

The model is built in explain mode: every option and placement exists, and each
user-level requirement is a free literal `req:<name>` that, when true, enforces it. Then:

* `conflict`: a minimal set of requirements that cannot hold together (a MUS). CP-SAT's
  assumption core gives a small starting set (objective cleared, one worker: assumptions
  and objectives or parallelism do not mix, or-tools#3943/#3102), intersected with the
  assumptions (or-tools#5141); a deletion loop with the literals fixed by constraints, not
  assumptions, then removes every member whose removal keeps it infeasible, so the result
  does not rely on the assumption machinery (or-tools#4109).
* `correction`: the cheapest set to relax (minimum correction set weighted by
  `Requirement.weight`): the actionable answer when several conflicts overlap.
* `relaxation`: for a numeric requirement (capex cap, monthly cap, racks at a site, a
  training deadline), how far it must move with everything else enforced.

Every answer says how sure it is. The explanation is only asked for once the normal model
is proven infeasible, but its own solves share one time limit: a deletion check that runs
out of time keeps its member (the set still conflicts, it may just not be minimal), and an
explanation that cannot even confirm the conflict says so (`timed_out`) rather than
printing every requirement as a "conflict".

Workloads with no option at all (every candidate rejected upstream) cannot be fixed by
relaxing any requirement here; they are reported as `unplaceable`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from ortools.sat.python import cp_model

from gpusolve.optimize import interrupt
from gpusolve.optimize.builder import BuildOptions, Expr
from gpusolve.optimize.guard import LIMIT
from gpusolve.optimize.ir import Instance, Requirement, SolveConfig
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.prune import usable_owned

_CHECK_LIMIT_S = 10.0  # per feasibility check inside the deletion loop


class Explainable(Protocol):
    """A model in explain mode: the single plan's `Built`, or the phased model's
    (`phased_explain.py`); the conflict search needs only these."""

    @property
    def model(self) -> cp_model.CpModel: ...

    @property
    def literals(self) -> dict[str, cp_model.IntVar]: ...

    @property
    def requirements(self) -> dict[str, Requirement]: ...


@dataclass(frozen=True)
class Explanation:
    conflict: tuple[str, ...]  # requirement names that cannot all hold (minimal if `minimal`)
    correction: tuple[str, ...]  # cheapest set of requirement names to relax
    unplaceable: tuple[str, ...]  # workloads with no option whatever is relaxed
    minimal: bool  # every conflict member was proved necessary
    requirements: dict[str, Requirement]  # descriptions for the names above
    timed_out: bool = False  # some check ran out of time: `conflict` may be empty or too big


Outcome = Literal["least", "enough", "not_enough", "unknown"]


@dataclass(frozen=True)
class Relaxation:
    """How far one numeric requirement must move for a plan to exist.

    `outcome`: "least" - `needed` is the smallest value that admits a plan (proven);
    "enough" - a plan exists at `needed`, a smaller move may do (the search ran out of
    time); "not_enough" - no plan even with this requirement dropped (proven);
    "unknown" - the search ran out of time before finding any plan."""

    requirement: str
    current: int
    needed: int | None
    outcome: Outcome = "least"

    @property
    def delta(self) -> int | None:
        """How much the limit must rise, when known. Zero or less when a plan exists within
        the current limit (the requirement is not what blocks the plan)."""
        return None if self.needed is None else self.needed - self.current


def explain(instance: Instance, config: SolveConfig | None = None) -> Explanation | None:
    """None when every requirement can hold at once; else why not."""
    config = config or SolveConfig()
    clock = _Clock(config)
    built = build(instance, BuildOptions(mode="explain"))
    if built.unplaceable:
        return Explanation((), (), built.unplaceable, True, built.requirements)
    names = sorted(built.literals)
    everything = _satisfiable(built, names, clock)
    if everything is True:
        return None
    if everything is None:  # not even the whole set was shown to conflict in time
        return Explanation((), (), (), False, {}, timed_out=True)
    core = assumption_core(built, names, clock)
    conflict, minimal = shrink(built, core, clock)
    correction = min_correction_set(built, clock)
    described = {n: built.requirements[n] for n in sorted({*conflict, *correction})}
    return Explanation(
        tuple(conflict), tuple(correction), (), minimal, described, timed_out=not minimal
    )


def _check_model(built: Explainable) -> cp_model.CpModel:
    # The base model never carries an objective, assumptions or hints, but a core
    # computed with an objective present is useless (or-tools#3943), so be explicit.
    model = built.model.clone()
    model.clear_objective()  # type: ignore[no-untyped-call]
    model.clear_assumptions()
    model.clear_hints()  # type: ignore[no-untyped-call]
    return model


class _Clock:
    """One time limit shared by every solve of an explanation: the wall clock, and the work
    limit (CP-SAT's deterministic time, summed over the solves) where the run sets one, so
    that the same explanation ends at the same point on any load."""

    def __init__(self, config: SolveConfig) -> None:
        self.config = config
        self.deadline = time.perf_counter() + config.time_limit_s
        self.solvers: list[cp_model.CpSolver] = []

    def work_left(self) -> float:
        if self.config.work_limit is None:
            return math.inf
        spent = sum(s.response_proto.deterministic_time for s in self.solvers)
        return self.config.work_limit - spent

    def left(self) -> float:
        """What is left of the tighter limit (seconds or work units): <= 0 when spent."""
        return min(self.deadline - time.perf_counter(), self.work_left())

    def solver(self, workers: int, cap: float = _CHECK_LIMIT_S) -> cp_model.CpSolver:
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = workers
        solver.parameters.random_seed = self.config.seed
        wall = self.deadline - time.perf_counter()
        solver.parameters.max_time_in_seconds = max(0.001, min(wall, cap))
        work = self.work_left()
        if math.isfinite(work):
            solver.parameters.max_deterministic_time = max(0.001, min(work, cap))
        interrupt.watch(solver, announce=False)  # Ctrl-C / SIGTERM stops this search too
        self.solvers.append(solver)
        return solver


def _satisfiable(built: Explainable, enforced: list[str], clock: _Clock) -> bool | None:
    """Can the `enforced` requirements hold together (the others relaxed)? None: unknown."""
    if clock.left() <= 0:
        return None
    model = _check_model(built)
    for name in enforced:
        model.add(built.literals[name] == 1)
    status = clock.solver(clock.config.workers).solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True
    if status == cp_model.INFEASIBLE:
        return False
    return None


def assumption_core(built: Explainable, names: list[str], clock: _Clock) -> list[str]:
    """A (not necessarily minimal) infeasible subset of `names`, from CP-SAT's assumptions.

    Falls back to all of `names` if the core is empty or the status disagrees with the
    hard-fixed check that preceded it (known assumption issues, see module doc)."""
    model = _check_model(built)
    model.add_assumptions([built.literals[n] for n in names])
    solver = clock.solver(1)  # assumptions need sequential search (or-tools#3102)
    if solver.solve(model) != cp_model.INFEASIBLE:
        return list(names)
    index = set(solver.sufficient_assumptions_for_infeasibility())
    core = [n for n in names if built.literals[n].index in index]
    return core or list(names)


def shrink(built: Explainable, core: list[str], clock: _Clock) -> tuple[list[str], bool]:
    """Deletion loop: drop each member whose absence keeps the rest infeasible.

    Returns the shrunk set and whether every kept member was proved necessary (a check
    that times out keeps its member, so the set stays a conflict but may not be minimal).
    """
    current = sorted(core)
    proved = True
    for name in list(current):
        if name not in current:
            continue
        rest = [n for n in current if n != name]
        verdict = _satisfiable(built, rest, clock)
        if verdict is False:
            current = rest
        elif verdict is None:
            proved = False
    return current, proved


def min_correction_set(built: Explainable, clock: _Clock) -> list[str]:
    """The requirements to relax at least total weight so that a plan exists."""
    model = _check_model(built)
    names = sorted(built.literals)
    weights = [max(1, built.requirements[n].weight) for n in names]
    lits = [built.literals[n] for n in names]
    relaxed = cp_model.LinearExpr.weighted_sum([1 - lit for lit in lits], weights)
    model.minimize(relaxed)
    # Plain optimisation (no assumptions), so every worker helps. A set found before the
    # time runs out still restores feasibility; it may just not be the cheapest.
    solver = clock.solver(clock.config.workers, cap=clock.config.time_limit_s)
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return []
    return [n for n, lit in zip(names, lits, strict=True) if not solver.boolean_value(lit)]


def _placeable_sites(instance: Instance) -> set[str]:
    """Sites some option could use if every requirement were relaxed."""
    owned = usable_owned(instance, "explain", frozenset(), prune=False)
    return {p.site for o in owned for p in o.placements}


def relaxation(
    instance: Instance,
    requirement: str,
    config: SolveConfig | None = None,
    option_seconds: Mapping[str, int] | None = None,
    deadline_s: int | None = None,
) -> Relaxation | None:
    """How far a numeric requirement's limit must move for a plan to exist, with every
    other requirement enforced; None if the requirement is not numeric.

    Deadlines (`deadline:<workload>`) need `deadline_s` and `option_seconds`: each of the
    instance's option keys to its time to train in whole seconds (rounded up)."""
    config = config or SolveConfig()
    # Bins, not the lazy relaxation: this is a single solve whose answer must be exact.
    built = build(instance, BuildOptions(relax=frozenset({requirement}), fallback="bins"))
    h = instance.horizon_months
    target: Expr
    kind, _, subject = requirement.partition(":")
    capped_capex, capped_opex, spent = budget_terms(built)
    if requirement == "capex" and instance.capex_max is not None:
        current, target = instance.capex_max, capped_capex
    elif requirement == "monthly" and instance.monthly_max is not None:
        current, target = instance.monthly_max, capped_opex
    elif requirement == "total" and instance.total_max is not None:
        current, target = instance.total_max, spent
    elif kind == "racks" and subject in _placeable_sites(instance):
        current = instance.sites[subject].racks_available
        pack = built.packing.get(subject)
        # No placement can use the site once the others are enforced: zero racks there.
        target = pack.total if pack is not None else cp_model.LinearExpr.weighted_sum([], [])
    elif kind == "deadline" and option_seconds is not None and deadline_s is not None:
        if not _within_integers(deadline_s, option_seconds.values()):
            return None  # no move can be stated in CP-SAT's integers
        current, target = deadline_s, _chosen_seconds(built, subject, option_seconds)
    else:
        return None
    model = built.model.clone()
    model.minimize(target)
    solver = _Clock(config).solver(config.workers, cap=config.time_limit_s)
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return Relaxation(requirement, current, None, "not_enough")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Relaxation(requirement, current, None, "unknown")
    value = int(solver.value(target))
    needed = math.ceil(value / h) if requirement == "monthly" else value
    return Relaxation(
        requirement, current, needed, "least" if status == cp_model.OPTIMAL else "enough"
    )


def budget_terms(built: Built) -> tuple[Expr, Expr, Expr]:
    """What the capex, monthly and total caps count (`costs.add_budgets`): with financed
    servers, the capex cap their down payments only, the monthly cap their instalments,
    the total cap all they cost."""
    fin = built.financing
    if fin is None:
        return built.capex, built.opex, built.capex + built.opex
    spent = built.capex + built.opex + fin.extra
    return built.capex - fin.financed, built.opex + fin.instalments, spent


def _within_integers(deadline_s: int, seconds: Iterable[int]) -> bool:
    """Whether a deadline and the options' times fit the guard's limit on the model's
    integers. Inputs are bounded where they are written (a measured MFU of 1e-300 made
    times of 10^300 s, beyond int64, exit 70); this keeps any figure the bounds miss from
    reaching CP-SAT as an out-of-range coefficient."""
    return all(0 <= s <= LIMIT for s in (deadline_s, *seconds))


def _chosen_seconds(built: Built, workload: str, option_seconds: Mapping[str, int]) -> Expr:
    """The chosen option's time to train for one workload (exactly one option is chosen)."""
    pairs = [(option_seconds.get(o.option.key, 0), o.var) for o in built.owned]
    pairs += [(option_seconds.get(c.option.key, 0), c.var) for c in built.cloud]
    owned = [o.option.workload for o in built.owned] + [c.option.workload for c in built.cloud]
    kept = [(s, v) for (s, v), w in zip(pairs, owned, strict=True) if w == workload]
    return cp_model.LinearExpr.weighted_sum([v for _, v in kept], [s for s, _ in kept])
