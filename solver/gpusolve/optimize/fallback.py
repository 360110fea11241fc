"""A plan known to hold, for a search that stops at its limit without one.

Why: a search stopped by its work or time limit can end with no plan at all (CP-SAT's
own first plans on large models come late), although renting every workload, or buying
each one's standalone-cheapest servers, is a plan whenever the requirements admit it.
So the run answers with the best of these selections instead of "no plan":

* all-rent: every workload on its cheapest rental (only when each has one);
* greedy: every workload on its standalone-cheapest choice (`warmstart.ranked_choices`:
  its servers and the racks they need alone, as a spreadsheet prices it), the servers
  packed into racks by the completion below;
* restricted, only when neither holds: the warm start's restricted set (each workload's
  few standalone-cheapest choices and every rental, `warmstart.fallback_choices`), one
  small search, for when the standalone choices break a shared limit together.

Nothing is trusted blindly: each selection is completed and checked by CP-SAT on the
stage's own model (the caller's cuts and bounds included) with every other choice closed,
so servers, racks, fabric and money follow from the model itself and every constraint is
checked as CP-SAT reads it. A site whose packing the model only relaxes is also packed
exactly (`lazy.violated`): a plan whose racks do not hold its servers is no fallback.

The completion is bounded by its own deterministic work (`Tuning.fallback_work`), not by
the caller's limit, which may be too short for anything: it is what makes the answer
exist, and with the choices closed it is a propagation and a small packing search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from gpusolve.optimize import cpsat, interrupt
from gpusolve.optimize.builder import Expr, Var
from gpusolve.optimize.model import Built
from gpusolve.optimize.tuning import Tuning

Kind = Literal["all-rent", "greedy", "restricted"]


@dataclass(frozen=True)
class Fallback:
    """A checked plan: which selection it is, a solver holding it, its objective's value."""

    kind: Kind
    solver: cp_model.CpSolver
    objective: int  # the value of the objective it was completed under (minimised)
    values: dict[int, int]  # every model variable's value, by proto index (a hint)


def cheapest_rentals(built: Built) -> list[Var] | None:
    """Each workload's cheapest rental (price plus penalty; input order on ties); None
    when some workload has none in the model."""
    best: dict[str, tuple[int, int, Var]] = {}
    for cloud in built.cloud:
        key = (cloud.option.cost_total + cloud.option.penalty, cloud.rank, cloud.var)
        held = best.get(cloud.option.workload)
        if held is None or key[:2] < held[:2]:
            best[cloud.option.workload] = key
    if len(best) < len(built.instance.workloads):
        return None
    return [var for _, _, var in best.values()]


def selections(built: Built, tuning: Tuning) -> list[tuple[Kind, list[Var]]]:
    """The selections tried first, each one choice per workload: all-rent, then greedy
    (left out where it is the same choices)."""
    from gpusolve.optimize.search.warmstart import ranked_choices

    out: list[tuple[Kind, list[Var]]] = []
    rentals = cheapest_rentals(built)
    if rentals is not None:
        out.append(("all-rent", rentals))
    ranked = ranked_choices(built)
    if len(ranked) == len(built.instance.workloads):
        greedy = [choices[0] for choices in ranked.values()]
        if rentals is None or {v.index for v in greedy} != {v.index for v in rentals}:
            out.append(("greedy", greedy))
    return out


def restricted(built: Built, tuning: Tuning) -> list[Var]:
    """The warm start's restricted set (each workload's few standalone-cheapest choices and
    every rental); empty when some workload has no priceable choice."""
    from gpusolve.optimize.search.warmstart import candidates

    return candidates(built, None, tuning)


def complete(
    built: Built, model: cp_model.CpModel, allowed: Sequence[Var], tuning: Tuning
) -> cp_model.CpSolver | None:
    """A solver holding the best completion found of `model` (a stage's clone, objective
    set) with every choice outside `allowed` closed; None when CP-SAT finds none within
    `Tuning.fallback_work`, or a relaxed site's racks do not hold its servers."""
    keep = {var.index for var in allowed}
    built.close(model, (var.index for var in built.choice_vars() if var.index not in keep))
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = 1
    params.max_deterministic_time = tuning.fallback_work
    params.max_time_in_seconds = tuning.evaluate_s
    # Ctrl-C stops it; the command's deadline does not: the plan must exist.
    interrupt.watch(solver, announce=False, deadline=False)
    status = solver.solve(model)
    if not cpsat.solved(status):
        return None
    if built.relaxed:
        from gpusolve.optimize.search import lazy

        if lazy.violated(built.relaxed, solver, tuning):
            return None
    return solver


def find(
    built: Built,
    model_for: Callable[[], cp_model.CpModel],
    objective: Expr,
    tuning: Tuning,
) -> Fallback | None:
    """The cheapest (under `objective`, minimised) of the selections that hold, else the
    restricted set's best plan; None when nothing holds. `model_for` gives a fresh clone
    of the stage's model with `objective` set."""
    held: list[Fallback] = []
    for kind, allowed in selections(built, tuning):
        if interrupt.requested():
            break
        found = _try(built, model_for, objective, tuning, kind, allowed)
        held += [found] if found is not None else []
    if not held and not interrupt.requested():
        allowed = restricted(built, tuning)
        if allowed:
            found = _try(built, model_for, objective, tuning, "restricted", allowed)
            held += [found] if found is not None else []
    return min(held, key=lambda item: item.objective, default=None)


def _try(
    built: Built,
    model_for: Callable[[], cp_model.CpModel],
    objective: Expr,
    tuning: Tuning,
    kind: Kind,
    allowed: Sequence[Var],
) -> Fallback | None:
    solver = complete(built, model_for(), allowed, tuning)
    if solver is None:
        return None
    values = cpsat.values(built, solver)
    return Fallback(kind, solver, int(solver.value(objective)), values)
