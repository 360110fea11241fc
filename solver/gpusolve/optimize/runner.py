"""Runs the solves of one plan against a shared deadline, and records what each took.

`Stages` is the exact model's runner: each stage is one CP-SAT solve of a fresh clone,
with every earlier criterion bounded by its optimum and the previous plan as its hint.
The large-instance search (`search/`) extends it with rack-packing cuts between solves
and with the choices a core leaves out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from gpusolve.optimize import cpsat, interrupt
from gpusolve.optimize.builder import Expr
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.model import Built
from gpusolve.optimize.stages import Criterion, fold

if TYPE_CHECKING:
    from gpusolve.optimize.fallback import Fallback

Prepare = Callable[[cp_model.CpModel], None]
Purchase = Sequence[tuple[Expr, int]]
RunResult = tuple[cp_model.CpSolver, cp_model.CpSolverStatus, float]


@dataclass(frozen=True)
class StageRecord:
    """One stage as it ran: what it searched, its wall time and CP-SAT's status name."""

    what: str
    wall_s: float
    status: str  # CP-SAT's name: OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN, MODEL_INVALID


@dataclass(frozen=True)
class First:
    """Stage 1's answer: the solver holding its plan, the status for the whole model, and
    a bound on the normalised leading criterion (None when nothing is known)."""

    solver: cp_model.CpSolver
    status: cp_model.CpSolverStatus
    lead: int | None


class Stages:
    """The stages of one plan, each a solve of a clone of the built model."""

    def __init__(self, built: Built, config: SolveConfig, prepare: Prepare | None, start: float):
        self.built = built
        self.config = config
        self.tuning = config.tuning
        self.prepare = prepare
        self.start = start
        # What comes after the last solve (evaluating the plan, reading it out) is kept
        # inside the caller's limit.
        finish = min(
            self.tuning.finish_s_per_choice * built.stats["choice_vars"],
            self.tuning.finish_max_share * config.time_limit_s,
        )
        self.deadline = start + config.time_limit_s - finish
        # Earlier stages' optima, kept as one-sided bounds: `cost <= C*` says the same as
        # `cost == C*` at an optimum but propagates far better than a long equality.
        self.fixed: list[tuple[Criterion, int]] = []
        self.records: list[StageRecord] = []
        self._depth = 0  # nested `timed` calls record only the outermost
        # The fallback plan once looked for (`fallback`): a one-item list, as None is an
        # answer too.
        self._fallback: list[Fallback | None] = []

    def remaining(self) -> float:
        if interrupt.requested():  # Ctrl-C: no more time for any stage
            return 0.0
        return self.deadline - time.perf_counter()

    def timed(self, what: str, call: Callable[[], RunResult]) -> RunResult:
        """Run `call` (a stage, or a search made of stages) and record it as one stage."""
        began = time.perf_counter()
        self._depth += 1
        try:
            result = call()
        finally:
            self._depth -= 1
        if self._depth == 0:
            solver, status = result[0], result[1]
            wall = time.perf_counter() - began
            self.records.append(StageRecord(what, wall, solver.status_name(status)))
        return result

    def fallback(self, group: Sequence[Criterion]) -> Fallback | None:
        """A plan known to hold (`fallback.py`), completed under stage 1's objective on
        the stage's own model; looked for once, recorded as a stage."""
        if not self._fallback:
            from gpusolve.optimize import fallback

            objective, _ = fold(group)
            began = time.perf_counter()
            found = fallback.find(
                self.built, lambda: self.stage_model(objective, {}, ()), group[0], self.tuning
            )
            status = "FEASIBLE" if found is not None else "UNKNOWN"
            what = "fallback" + ("" if found is None else f": {found.kind}")
            self.records.append(StageRecord(what, time.perf_counter() - began, status))
            self._fallback.append(found)
        return self._fallback[0]

    def fallback_found(self) -> Fallback | None:
        """The fallback if it was looked for already (nothing is computed)."""
        return self._fallback[0] if self._fallback else None

    def first(self, group: Sequence[Criterion], hint: dict[int, int] | None) -> First:
        """Stage 1: the leading criteria, folded, in one solve from `hint`."""
        objective, weights = fold(group)
        return self.first_plain(group, objective, weights[0], hint or {})

    def first_plain(
        self, group: Sequence[Criterion], objective: Expr, weight: int, hint: dict[int, int]
    ) -> First:
        """Stage 1 as one solve of the whole model. The folded objective's bound bounds the
        leading criterion: the rest of the fold is worth less than one unit of it."""
        solver, status, raw = self.run(
            objective, hint, self.config.relative_gap, self.remaining(), what=stage_name(1, group)
        )
        lead: int | None = None
        if cpsat.solved(status):
            lead = int(cpsat.integral_bound(raw, False)) // weight
        elif status == cp_model.UNKNOWN and math.isfinite(raw):
            lead = max(0, cpsat.integral_bound(raw, False) // weight)
        return First(solver, status, lead)

    def run(
        self,
        objective: Expr,
        hint: dict[int, int],
        gap: float,
        time_s: float,
        purchase: Purchase = (),
        give_up: int | None = None,
        what: str = "stage",
    ) -> RunResult:
        """One stage: the solver holding its plan, the status, and the objective bound.

        `purchase` (expression, value) fixes what the plan buys (`stages.purchase`): the
        tie-break then only chooses among plans with exactly that purchase. `give_up` is
        for the large-instance search (`search.staged`)."""
        return self.timed(what, lambda: self._run(objective, hint, gap, time_s, purchase, give_up))

    def _run(
        self,
        objective: Expr,
        hint: dict[int, int],
        gap: float,
        time_s: float,
        purchase: Purchase,
        give_up: int | None,
    ) -> RunResult:
        model = self.stage_model(objective, hint, purchase)
        solver, status = self.solve(model, gap, time_s)
        return solver, status, solver.best_objective_bound

    def stage_model(
        self, objective: Expr, hint: dict[int, int], purchase: Purchase
    ) -> cp_model.CpModel:
        """A clone of the model for one stage: its objective, the earlier optima as bounds,
        the purchase and the hint."""
        model = self.built.model.clone()
        self._restrict(model)
        if self.prepare is not None:
            self.prepare(model)
        for item, value in self.fixed:
            model.add(item.expr >= value if item.maximise else item.expr <= value)
        for expr, value in purchase:
            model.add(expr == value)
        extra = self._extend(model, hint)
        model.minimize(objective)
        assert not model.proto.has_floating_point_objective()
        if hint:
            # One bulk write instead of an `add_hint` call per variable.
            indices = [var.index for var in self.built.all_vars() if var.index in hint]
            values = [hint[index] for index in indices] + list(extra.values())
            model.proto.solution_hint.vars.extend(indices + list(extra))
            model.proto.solution_hint.values.extend(values)
        return model

    def _restrict(self, model: cp_model.CpModel) -> None:
        """Hook: close variables before anything else is added (the core search's)."""

    def _extend(self, model: cp_model.CpModel, hint: dict[int, int]) -> dict[int, int]:
        """Hook: add rows after the stage's bounds; returns hint values for variables it
        added (by proto index)."""
        return {}

    def solve(
        self,
        model: cp_model.CpModel,
        gap: float,
        time_s: float,
        fix_hint: bool = False,
        callback: cp_model.CpSolverSolutionCallback | None = None,
    ) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
        solver = cpsat.solver_for(self.built, self.config, gap, time_s, fix_hint)
        return solver, solver.solve(model, callback)


def stage_name(stage: int, group: Sequence[Criterion]) -> str:
    """How a stage is recorded: its number and the criteria it settles."""
    return f"stage {stage}: " + ", ".join(item.name for item in group)
