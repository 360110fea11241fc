"""The LP relaxation of a built model, solved with GLOP, for the warm start.

CP-SAT solves this LP itself but does not hand out its values; the warm start needs them to
see which (SKU, site) pairs the whole fleet leans on (`warmstart.pool_choices`). The
translation reads the model proto: linear rows as they are, exactly-one and at-least-one
over literals as sums (a negated literal is 1 - x), integrality dropped. Rows with an
enforcement literal are left out: the relaxation only loosens, and the values only steer a
heuristic, never the proof.
"""

from __future__ import annotations

import math

from ortools.linear_solver import linear_solver_pb2, pywraplp
from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

# CP-SAT marks an unbounded side of a linear row with the int64 extremes.
_UNBOUNDED = 2**62


def lp_values(
    model: cp_model.CpModel, objective: cp_model.LinearExpr, time_s: float
) -> list[float] | None:
    """An optimal solution of the LP relaxation of `model` minimising `objective`, by proto
    index; None when GLOP finds none within `time_s` (or the LP is infeasible)."""
    request = linear_solver_pb2.MPModelRequest(
        model=_lp_model(model, objective),
        solver_type=linear_solver_pb2.MPModelRequest.GLOP_LINEAR_PROGRAMMING,
        solver_time_limit_seconds=max(time_s, 0.001),
    )
    response = linear_solver_pb2.MPSolutionResponse()
    pywraplp.Solver.SolveWithProto(request, response)
    if response.status != linear_solver_pb2.MPSOLVER_OPTIMAL:
        return None
    return list(response.variable_value)


def _lp_model(
    model: cp_model.CpModel, objective: cp_model.LinearExpr
) -> linear_solver_pb2.MPModelProto:
    proto = model.proto
    lp = linear_solver_pb2.MPModelProto()
    flat = cmh.FlatIntExpr(objective)
    costs: dict[int, int] = {}
    for var, coef in zip(flat.vars, flat.coeffs, strict=True):
        costs[var.index] = costs.get(var.index, 0) + coef
    for index, var in enumerate(proto.variables):
        domain = var.domain
        lp.variable.add(
            lower_bound=domain[0],
            upper_bound=domain[len(domain) - 1],
            objective_coefficient=costs.get(index, 0),
        )
    for ct in proto.constraints:
        if len(ct.enforcement_literal):
            continue
        if ct.has_linear():
            domain = ct.linear.domain
            low, high = domain[0], domain[len(domain) - 1]
            row = lp.constraint.add(
                lower_bound=low if low > -_UNBOUNDED else -math.inf,
                upper_bound=high if high < _UNBOUNDED else math.inf,
            )
            row.var_index.extend(ct.linear.vars)
            row.coefficient.extend(ct.linear.coeffs)
        elif ct.has_exactly_one() or ct.has_bool_or():
            exact = ct.has_exactly_one()
            literals = list(ct.exactly_one.literals if exact else ct.bool_or.literals)
            # sum(x for positive) + sum(1 - x for negated) >= 1 (== 1 for exactly one).
            negated = sum(1 for lit in literals if lit < 0)
            row = lp.constraint.add(
                lower_bound=1 - negated, upper_bound=1 - negated if exact else math.inf
            )
            row.var_index.extend([lit if lit >= 0 else -lit - 1 for lit in literals])
            row.coefficient.extend([1 if lit >= 0 else -1 for lit in literals])
    return lp
