"""The LP relaxation of a built model, solved with GLOP: values, reduced costs and a bound.

CP-SAT solves this LP itself but hands out neither its values nor its duals. The warm start
reads the values to see which (SKU, site) pairs the whole fleet leans on
(`warmstart.pool_choices`); on models too large for CP-SAT's own LP the core search reads
the reduced costs and the bound (`core.py`).

The translation reads the model proto: linear rows as they are, exactly-one and at-least-one
over literals as sums (a negated literal is 1 - x), integrality dropped. Rows with an
enforcement literal and constraints of any other kind are left out: the relaxation only
loosens, so its bound holds for every plan of the model.

GLOP's primal simplex with `Tuning.glop_parameters`, not its dual: on the largest models
the primal simplex is an order of magnitude faster (`benchmarks/README.md`).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Collection
from dataclasses import dataclass

from ortools.linear_solver import linear_solver_pb2, pywraplp
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from gpusolve.optimize.tuning import DEFAULT

# CP-SAT marks an unbounded side of a linear row with the int64 extremes.
_UNBOUNDED = 2**62
# The bound is computed in floating point from GLOP's duals; it is lowered by this share of
# the magnitudes that went into it, orders of magnitude more than the rounding error of
# the sums (about rows x 1e-16 of them), so the bound stays valid.
SAFETY = 1e-9


@dataclass(frozen=True)
class LpSolution:
    """An optimal LP solution with a bound that holds for every integral plan."""

    values: list[float]  # by proto index
    reduced_costs: list[float]  # objective coefficient minus the duals' row terms
    bound: float  # the objective is at least this in every plan of the model
    duals: list[float]  # by LP row (`Relaxation.lp.constraint`)


@dataclass(frozen=True)
class Relaxation:
    """A model's LP for one objective, translated once (the slow part) and solved
    as often as needed, with some variables fixed to 0 (`dichotomy.py`)."""

    lp: linear_solver_pb2.MPModelProto
    offset: int  # the objective's constant, which the LP leaves out
    parameters: str = DEFAULT.glop_parameters  # GLOP's (`Tuning.glop_parameters`)

    def solve(self, time_s: float, closed: Collection[int] = ()) -> LpSolution | None:
        """The LP optimum with the `closed` variables fixed to 0; None when GLOP finds none
        within `time_s` (or the LP is infeasible). The bound holds for every plan of the
        model that takes none of the closed variables."""
        lp = self.lp
        if closed:
            # A copy: the translation is shared (a copy is far cheaper than a translation).
            lp = linear_solver_pb2.MPModelProto()
            lp.CopyFrom(self.lp)
            for index in closed:
                lp.variable[index].lower_bound = lp.variable[index].upper_bound = 0
        response = glop(lp, time_s, self.parameters)
        if response is None:
            return None
        duals = list(response.dual_value)
        reduced, bound = lagrangian(lp, duals, self.offset)
        return LpSolution(list(response.variable_value), reduced, bound, duals)


def glop(
    lp: linear_solver_pb2.MPModelProto, time_s: float, parameters: str = DEFAULT.glop_parameters
) -> linear_solver_pb2.MPSolutionResponse | None:
    """GLOP's optimum of `lp`; None when it finds none within `time_s` (or there is none)."""
    request = linear_solver_pb2.MPModelRequest(
        model=lp,
        solver_type=linear_solver_pb2.MPModelRequest.GLOP_LINEAR_PROGRAMMING,
        solver_time_limit_seconds=max(time_s, 0.001),
        solver_specific_parameters=parameters,
    )
    response = linear_solver_pb2.MPSolutionResponse()
    pywraplp.Solver.SolveWithProto(request, response)
    return response if response.status == linear_solver_pb2.MPSOLVER_OPTIMAL else None


def translate(
    model: cp_model.CpModel,
    objective: cp_model.LinearExpr,
    parameters: str = DEFAULT.glop_parameters,
) -> Relaxation:
    """The LP relaxation of `model` minimising `objective`, ready to solve with GLOP's
    `parameters`."""
    return Relaxation(_lp_model(model, objective), cmh.FlatIntExpr(objective).offset, parameters)


def lagrangian(
    lp: linear_solver_pb2.MPModelProto, duals: list[float], offset: float = 0.0
) -> tuple[list[float], float]:
    """Reduced costs and the Lagrangian bound of `lp` (minimised) for any row multipliers.

    For every x within the variable bounds that meets the rows, and any multipliers y,
    c.x >= sum_i y_i * (the side of row i that y_i's sign makes binding)
            + sum_j min over [l_j, u_j] of (c_j - y.A_j) x_j.
    A multiplier whose sign points at an unbounded side counts as 0. At GLOP's optimal
    duals this is the LP optimum; computed here rather than taken from GLOP, it holds for
    whatever duals GLOP returns, so the bound never depends on GLOP's tolerances.
    """
    reduced = [var.objective_coefficient for var in lp.variable]
    weight = [abs(c) for c in reduced]  # magnitudes summed into each reduced cost
    total = offset
    magnitude = abs(offset)
    for row, y in zip(lp.constraint, duals, strict=True):
        side = binding_side(row, y)
        if side is None:
            continue
        total += y * side
        magnitude += abs(y * side)
        for index, coef in zip(row.var_index, row.coefficient, strict=True):
            reduced[index] -= y * coef
            weight[index] += abs(y * coef)
    for index, var in enumerate(lp.variable):
        d = reduced[index]
        total += min(d * var.lower_bound, d * var.upper_bound)
        magnitude += weight[index] * max(abs(var.lower_bound), abs(var.upper_bound))
    return reduced, total - SAFETY * magnitude


def binding_side(row: linear_solver_pb2.MPConstraintProto, dual: float) -> float | None:
    """The side of `row` its multiplier's sign makes binding; None when the multiplier
    counts as 0 (it is 0, or points at an unbounded side)."""
    side = row.lower_bound if dual > 0 else row.upper_bound
    return None if dual == 0 or math.isinf(side) else side


def _lp_model(
    model: cp_model.CpModel, objective: cp_model.LinearExpr
) -> linear_solver_pb2.MPModelProto:
    proto = _readable(model)
    lp = linear_solver_pb2.MPModelProto()
    flat = cmh.FlatIntExpr(objective)
    costs: dict[int, int] = {}
    for var, coef in zip(flat.vars, flat.coeffs, strict=True):
        costs[var.index] = costs.get(var.index, 0) + coef
    for index, var in enumerate(proto.variables):
        lp.variable.add(
            lower_bound=var.domain[0],
            upper_bound=var.domain[-1],
            objective_coefficient=costs.get(index, 0),
        )
    for ct in proto.constraints:
        if ct.enforcement_literal:
            continue
        kind = ct.WhichOneof("constraint")
        if kind == "linear":
            low, high = ct.linear.domain[0], ct.linear.domain[-1]
            row = lp.constraint.add(
                lower_bound=low if low > -_UNBOUNDED else -math.inf,
                upper_bound=high if high < _UNBOUNDED else math.inf,
            )
            row.var_index.extend(ct.linear.vars)
            row.coefficient.extend(ct.linear.coeffs)
        elif kind in ("exactly_one", "bool_or"):
            exact = kind == "exactly_one"
            literals = list(ct.exactly_one.literals if exact else ct.bool_or.literals)
            # sum(x for positive) + sum(1 - x for negated) >= 1 (== 1 for exactly one).
            negated = sum(1 for lit in literals if lit < 0)
            row = lp.constraint.add(
                lower_bound=1 - negated, upper_bound=1 - negated if exact else math.inf
            )
            row.var_index.extend([lit if lit >= 0 else -lit - 1 for lit in literals])
            row.coefficient.extend([1 if lit >= 0 else -1 for lit in literals])
    return lp


def _readable(model: cp_model.CpModel) -> cp_model_pb2.CpModelProto:
    """The model as a plain protobuf message. OR-Tools' own Python wrapper of the proto
    crosses into C++ on every field access and offers no serialisation, so the model is
    written out (`export_to_file`, binary) and parsed back, which halves the translation's
    time on the largest models."""
    with tempfile.TemporaryDirectory(prefix="gpusolve-") as folder:
        path = os.path.join(folder, "model.pb")
        if not model.export_to_file(path):  # pragma: no cover - a full disk
            raise OSError(f"could not write the model to {path}")
        message = cp_model_pb2.CpModelProto()
        with open(path, "rb") as handle:
            message.ParseFromString(handle.read())
        return message
