"""A plan known to hold, for a search that stops at its limit without one.

Why: a search stopped by its work or time limit can end with no plan at all (CP-SAT's
own first plans on large models come late), although renting every workload, or buying
each one's standalone-cheapest servers, is a plan whenever the requirements admit it.
So the run answers with the best of these selections instead of "no plan":

* all-rent: every workload on its cheapest rental (only when each has one);
* greedy: each workload in turn on its standalone-cheapest choice (`warmstart`'s pricing:
  its servers and the racks they need alone, as a spreadsheet prices it) whose site still
  has those racks after the workloads before it (`greedy_choices`), the servers packed
  into racks by the completion below;
* restricted, only when neither holds: the warm start's restricted set (each workload's
  few standalone-cheapest choices and every rental, `warmstart.fallback_choices`), one
  small search, for when the standalone choices break a shared limit together.

Nothing is trusted blindly: each selection is completed and checked by CP-SAT on the
stage's own model (the caller's cuts and bounds included) with every other choice closed,
so servers, racks, fabric and money follow from the model itself and every constraint is
checked as CP-SAT reads it. All-rent is first checked as it stands (every other variable
0, all of them fixed: a propagation, not a search, however large the model). A site whose
packing the model only relaxes is also packed exactly (`lazy.violated`): a plan whose
racks do not hold its servers is no fallback. On the largest models
(`Tuning.fallback_cut_min_choices`) a selection is completed in a model of the instance
cut down to its choices, and its plan checked against the whole instance by the
independent validator (`validate.check`); the caller's cuts (`prepare`) are not in that
model, and its plan is no hint (top-k stops at a fallback in any case).

The completion is bounded by its own deterministic work (`Tuning.fallback_work`), not by
the caller's limit, which may be too short for anything: it is what makes the answer
exist, and with the choices closed it is a propagation and a small packing search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ortools.sat.python import cp_model

from gpusolve.optimize import cpsat, interrupt
from gpusolve.optimize.builder import Var
from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption, Placement
from gpusolve.optimize.model import Built
from gpusolve.optimize.stages import Criterion
from gpusolve.optimize.tuning import Tuning

Kind = Literal["all-rent", "greedy", "restricted"]


@dataclass(frozen=True)
class Fallback:
    """A checked plan: which selection it is, the model it was completed in (the stage's,
    or one cut down to its choices) and a solver holding it there."""

    kind: Kind
    built: Built
    solver: cp_model.CpSolver
    head: int  # the leading criterion's value (the objective: money, or throughput score)
    rank: int  # what the fallbacks are compared by: `head`, negated when it is maximised
    values: dict[int, int]  # the stage model's variables by proto index (a hint); {} if cut


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
    out: list[tuple[Kind, list[Var]]] = []
    rentals = cheapest_rentals(built)
    if rentals is not None:
        out.append(("all-rent", rentals))
    greedy = greedy_choices(built)
    if greedy is not None and (
        rentals is None or {v.index for v in greedy} != {v.index for v in rentals}
    ):
        out.append(("greedy", greedy))
    return out


def greedy_choices(built: Built) -> list[Var] | None:
    """Each workload in input order takes its standalone-cheapest choice (`warmstart`'s
    pricing: servers and the racks they need alone) among those whose site still has the
    racks it needs alone after the workloads before it; None when one has none left.

    Racks are counted per workload, never shared: packing several workloads' servers
    together never needs more racks than packing each alone, so a site never runs out of
    racks in the completion that it did not run out of here. Without the count, identical
    workloads all pick the same site and overrun its racks (catalogue x16, 20 workloads)."""
    from gpusolve.optimize.patterns import racks_alone
    from gpusolve.optimize.search.warmstart import priced_choices

    instance = built.instance
    needs: dict[int, tuple[str, int]] = {}  # owned choice -> (site, racks it needs alone)
    for o in built.owned:
        where = instance.sites[o.placement.site]
        racks = racks_alone(instance.skus[o.option.sku], where, o.option.servers)
        if racks is not None:
            needs[o.var.index] = (where.id, racks)
    priced = priced_choices(built)
    taken: dict[str, int] = {}  # racks counted per site so far
    chosen: list[Var] = []
    for workload in instance.workloads:
        for _, _, var in sorted(priced.get(workload, []), key=lambda item: item[:2]):
            site, racks = needs.get(var.index, ("", 0))
            if site and taken.get(site, 0) + racks > instance.sites[site].racks_available:
                continue
            if site:
                taken[site] = taken.get(site, 0) + racks
            chosen.append(var)
            break
        else:
            return None
    return chosen


def restricted(built: Built, tuning: Tuning) -> list[Var]:
    """The warm start's restricted set (each workload's few standalone-cheapest choices and
    every rental); empty when some workload has no priceable choice."""
    from gpusolve.optimize.search.warmstart import candidates

    return candidates(built, None, tuning)


def nothing_owned(built: Built, chosen: Sequence[Var]) -> dict[int, int]:
    """A full assignment: the `chosen` choices taken, every other variable at 0 (no
    servers, sites, racks, fabric or storage): the all-rent plan, before it is checked."""
    values = {var.index: 0 for var in built.all_vars()}
    values.update({var.index: 1 for var in chosen})
    return values


def complete(
    built: Built,
    model: cp_model.CpModel,
    allowed: Sequence[Var],
    tuning: Tuning,
    values: dict[int, int] | None = None,
) -> cp_model.CpSolver | None:
    """A solver holding the best completion found of `model` (a stage's clone, objective
    set) with every choice outside `allowed` closed; None when CP-SAT finds none within
    `Tuning.fallback_work`, or a relaxed site's racks do not hold its servers. With
    `values` (a full assignment by proto index) nothing is searched: CP-SAT checks them,
    every variable fixed, a propagation even on the largest models."""
    keep = {var.index for var in allowed}
    built.close(model, (var.index for var in built.choice_vars() if var.index not in keep))
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = 1
    params.max_deterministic_time = tuning.fallback_work
    params.max_time_in_seconds = tuning.evaluate_s
    if values is not None:
        model.proto.solution_hint.vars.extend(list(values))
        model.proto.solution_hint.values.extend(list(values.values()))
        params.fix_variables_to_their_hinted_value = True
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
    head: Criterion,
    tuning: Tuning,
) -> Fallback | None:
    """The best (by the leading criterion `head`) of the selections that hold, else the
    restricted set's best plan; None when nothing holds. `model_for` gives a fresh clone
    of the stage's model with the stage's objective set. From
    `Tuning.fallback_cut_min_choices` choices each selection is completed in a model of
    the instance cut down to its choices instead (`cut_down`)."""
    cut = built.stats["choice_vars"] >= tuning.fallback_cut_min_choices

    def attempt(kind: Kind, allowed: Sequence[Var]) -> Fallback | None:
        if cut:
            return _try_cut(built, head, tuning, kind, allowed)
        return _try(built, model_for, head, tuning, kind, allowed)

    held: list[Fallback] = []
    for kind, allowed in selections(built, tuning):
        if interrupt.requested():
            break
        found = attempt(kind, allowed)
        held += [found] if found is not None else []
    if not held and not interrupt.requested():
        allowed = restricted(built, tuning)
        found = attempt("restricted", allowed) if allowed else None
        held += [found] if found is not None else []
    return min(held, key=lambda item: item.rank, default=None)


def rank(head: Criterion, value: int) -> int:
    return -value if head.maximise else value


def _try(
    built: Built,
    model_for: Callable[[], cp_model.CpModel],
    head: Criterion,
    tuning: Tuning,
    kind: Kind,
    allowed: Sequence[Var],
) -> Fallback | None:
    solver = None
    if kind == "all-rent":  # checked as it is first: no search on the largest models
        solver = complete(built, model_for(), allowed, tuning, nothing_owned(built, allowed))
    if solver is None:
        solver = complete(built, model_for(), allowed, tuning)
    if solver is None:
        return None
    value = int(solver.value(head.expr))
    return Fallback(kind, built, solver, value, rank(head, value), cpsat.values(built, solver))


def cut_down(built: Built, allowed: Sequence[Var]) -> Instance:
    """The instance with only the `allowed` choices (an owned option at its chosen sites,
    a rental), everything else as it was; max-throughput scores keep the whole instance's
    scale (`Instance.throughput_best`)."""
    keep = {var.index for var in allowed}
    places: dict[str, tuple[OwnedOption, list[Placement]]] = {}
    for o in built.owned:
        if o.var.index in keep:
            places.setdefault(o.option.key, (o.option, []))[1].append(o.placement)
    owned = tuple(replace(option, placements=tuple(at)) for option, at in places.values())
    cloud = tuple(c.option for c in built.cloud if c.var.index in keep)
    instance = built.instance
    best = dict(instance.throughput_best)
    options: list[OwnedOption | CloudOption] = [*instance.owned, *instance.cloud]
    for option in options:
        best[option.workload] = max(best.get(option.workload, 0), option.throughput)
    return replace(instance, owned=owned, cloud=cloud, throughput_best=best)


def _try_cut(
    built: Built, head: Criterion, tuning: Tuning, kind: Kind, allowed: Sequence[Var]
) -> Fallback | None:
    """A selection completed in a model of the instance cut down to its choices: on the
    largest models a clone of the whole model is what costs (a 421,086-choice model: 47 s
    for three selections, none completed), while the cut-down model holds a few dozen
    choices. Its plan is then checked against the whole instance by the independent
    validator (`validate.check`)."""
    from gpusolve.optimize.model import build
    from gpusolve.optimize.readout import read_solution
    from gpusolve.optimize.stages import criteria, fold, group
    from gpusolve.optimize.validate import check

    small = build(cut_down(built, allowed))
    order = criteria(small)
    objective, _ = fold(group(order, tuning.fold_limit)[0])
    model = small.model.clone()
    model.minimize(objective)
    solver = complete(small, model, small.choice_vars(), tuning)
    if solver is None:
        return None
    value = int(solver.value(order[0].expr))
    if check(built.instance, read_solution(small, solver, "feasible", value, value, 0.0)):
        return None
    return Fallback(kind, small, solver, value, rank(head, value), {})
