"""Why no purchase schedule exists: the requirements that conflict over the periods, and
how far each must move.

The phased model is built in explain mode (`phased.build_model` with a literal per
requirement, `phased_relax.py`): each fiscal year's capex budget (`capex_year:<y>`), the
capex cap (`capex`), each workload's demand in each period it runs (`demand:<w>:<p>`:
relaxed, the workload is not served then, as if it started later), a server's lead time
(`lead_time:<sku>`: relaxed, a server works in the period it is bought) and first month
(`available:<sku>`; a rental's card, `available:<card>`), and what the single plan names
(`regions:<w>`, `rule:<id>`, `deadline:<w>`, `racks:<site>`) from the periods' candidates
in explain mode. The conflict is found as the single plan finds it (`explain.py`: an
assumption core, then a deletion loop with the literals fixed by constraints), under one
time limit. A move is solved with the one requirement relaxed and every other enforced.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from ortools.sat.python import cp_model

from gpusolve.models.periods import fiscal_year
from gpusolve.optimize import explain as single
from gpusolve.optimize.ir import Requirement, SolveConfig
from gpusolve.optimize.phased.ir import Mode, PhasedInstance
from gpusolve.optimize.phased.model import PhasedVars, build_model


@dataclass(frozen=True)
class PhasedExplanation:
    conflict: tuple[str, ...]  # requirement names that cannot all hold (minimal if `minimal`)
    minimal: bool
    timed_out: bool = False  # not even the whole set was shown to conflict in time


@dataclass(frozen=True)
class Move:
    """How far one requirement must move, every other one held. `outcome` as
    `explain.Relaxation`'s; `needed`: the least budget (money), the least racks, the first
    period a workload can start in, or the first period a server must be orderable in."""

    requirement: str
    outcome: single.Outcome
    needed: int | None = None


@dataclass(frozen=True)
class _Explained:
    model: cp_model.CpModel
    literals: dict[str, cp_model.IntVar]
    requirements: dict[str, Requirement]
    vars: PhasedVars
    exprs: dict[str, object]


def _built(pi: PhasedInstance, requirements: Mapping[str, Requirement], mode: Mode) -> _Explained:
    m = cp_model.CpModel()
    lits = {n: m.new_bool_var(f"req:{n}") for n in sorted(requirements)}
    _, v, exprs = build_model(pi, mode, lits, m)
    return _Explained(m, lits, dict(requirements), v, exprs)


def explain_phased(
    pi: PhasedInstance,
    requirements: Mapping[str, Requirement],
    config: SolveConfig,
    mode: Mode = "free",
) -> PhasedExplanation | None:
    """None when every requirement can hold at once (the cause is elsewhere: the model's
    own limits); else a smallest set that conflicts."""
    clock = single._Clock(config)
    built = _built(pi, requirements, mode)
    names = sorted(built.literals)
    everything = single._satisfiable(built, names, clock)
    if everything is True:
        return None
    if everything is None:
        return PhasedExplanation((), False, timed_out=True)
    core = single.assumption_core(built, names, clock)
    conflict, minimal = single.shrink(built, core, clock)
    return PhasedExplanation(tuple(conflict), minimal, timed_out=not minimal)


def move(
    pi: PhasedInstance,
    requirements: Mapping[str, Requirement],
    name: str,
    config: SolveConfig,
    mode: Mode = "free",
) -> Move:
    """How far `name` must move with every other requirement held."""
    built = _built(pi, requirements, mode)
    m, lits = built.model, built.literals
    kind, _, subject = name.partition(":")
    family = [n for n in lits if n == name]
    target: cp_model.LinearExprT | None = None
    if kind == "demand":
        # Start later: the workload's demand dropped in a first run of its periods.
        workload = subject.rpartition(":")[0]
        family = sorted(
            (n for n in lits if n.startswith(f"demand:{workload}:")),
            key=lambda n: int(n.rpartition(":")[2]),
        )
        for before, after in itertools.pairwise(family):
            m.add(lits[before] <= lits[after])
        target = -cp_model.LinearExpr.sum([lits[n] for n in family])
    elif name == "capex" or kind == "capex_year":
        year = None if name == "capex" else int(subject)
        target = cp_model.LinearExpr.sum(
            [
                e
                for key, e in built.exprs.items()
                if key.startswith("capex:")
                and (year is None or fiscal_year(pi.periods[int(key[6:])].start_month) == year)
            ]
        )
    elif kind == "racks":
        last = len(pi.periods) - 1
        target = built.vars.racks.get((subject, last), 0)
    elif kind == "available" and subject in pi.available_period:  # a server, not a card
        target = _early_purchases(m, built.vars, pi, subject)
    for n, lit in lits.items():
        if n not in family:
            m.add(lit == 1)
    if target is not None:
        m.minimize(target)
    solver = single._Clock(config).solver(config.workers, cap=config.time_limit_s)
    status = solver.solve(m)
    if status == cp_model.INFEASIBLE:
        return Move(name, "not_enough")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Move(name, "unknown")
    outcome: single.Outcome = "least" if status == cp_model.OPTIMAL else "enough"
    if kind == "demand":
        first = next((i for i, n in enumerate(family) if solver.boolean_value(lits[n])), None)
        start = int(family[first].rpartition(":")[2]) if first is not None else None
        return Move(name, outcome, start)
    if target is None:
        return Move(name, outcome)
    needed = int(solver.value(target))
    if kind == "available":
        needed = pi.available_period.get(subject, 0) - needed
    return Move(name, outcome, needed)


def _early_purchases(
    m: cp_model.CpModel, v: PhasedVars, pi: PhasedInstance, sku: str
) -> cp_model.LinearExprT:
    """The periods before `sku`'s first that must allow buying it: Bools, each period's
    allowing the next's (buying early once means every later period may too)."""
    first = pi.available_period.get(sku, 0)
    allow = [m.new_bool_var(f"early[{sku},{q}]") for q in range(first)]
    for q, a in enumerate(allow):
        for (k, _s, p), x in v.buy.items():
            if k == sku and p == q:
                m.add(x == 0).only_enforce_if(~a)
        if q + 1 < first:
            m.add(a <= allow[q + 1])
    return cp_model.LinearExpr.sum(allow)
