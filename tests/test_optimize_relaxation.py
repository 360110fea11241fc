"""The LP relaxation the warm start and the core search read: rows, literals and
integrality as an LP; reduced costs and a bound that holds for every integral plan."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.linear_solver import linear_solver_pb2
from ortools.sat.python import cp_model

from gpusolve.optimize.search import relaxation


def lp_values(model: cp_model.CpModel, objective: cp_model.LinearExprT) -> list[float] | None:
    solution = relaxation.translate(model, objective).solve(10.0)
    return None if solution is None else solution.values


def test_integrality_is_dropped() -> None:
    # At most 1.5 of three Booleans: the LP takes 1.5 of them, an integer plan only 1.
    model = cp_model.CpModel()
    xs = [model.new_bool_var(f"x{i}") for i in range(3)]
    model.add(2 * sum(xs) <= 3)
    values = lp_values(model, -sum(xs))
    assert values is not None
    assert sum(values) == pytest.approx(1.5)


def test_negated_literals_read_as_one_minus_the_variable() -> None:
    # at least one of (x, not y) means x >= y; minimising x - 3y takes both to 1. Read as a
    # plain sum it would allow y = 1, x = 0 (objective -3).
    model = cp_model.CpModel()
    x, y = model.new_bool_var("x"), model.new_bool_var("y")
    model.add_bool_or([x, ~y])
    values = lp_values(model, x - 3 * y)
    assert values == pytest.approx([1.0, 1.0])


def test_exactly_one_is_an_equality() -> None:
    model = cp_model.CpModel()
    a, b = model.new_bool_var("a"), model.new_bool_var("b")
    model.add_exactly_one([a, ~b])  # a + (1 - b) == 1, so a == b
    values = lp_values(model, 2 * b - a)  # minimised at a == b == 0
    assert values == pytest.approx([0.0, 0.0])
    values = lp_values(model, a - 2 * b)  # minimised at a == b == 1
    assert values == pytest.approx([1.0, 1.0])


def test_an_infeasible_lp_gives_no_values() -> None:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 3, "x")
    model.add(x >= 5)
    assert relaxation.translate(model, x).solve(10.0) is None


def test_enforced_rows_are_left_out() -> None:
    # x <= 0 only when z: dropped, the LP may take x = 1 with z = 1.
    model = cp_model.CpModel()
    x, z = model.new_bool_var("x"), model.new_bool_var("z")
    model.add(x <= 0).only_enforce_if(z)
    model.add(z == 1)
    values = lp_values(model, -x)
    assert values is not None and values[0] == pytest.approx(1.0)


def test_the_bound_is_the_lp_optimum_with_the_objective_offset() -> None:
    # min 10 + 3x + 2y with x + y >= 1.5: the LP takes y = 1, x = 0.5 (13.5).
    model = cp_model.CpModel()
    x, y = model.new_bool_var("x"), model.new_bool_var("y")
    model.add(x + y >= 1)
    model.add(2 * x + 2 * y >= 3)
    solution = relaxation.translate(model, 10 + 3 * x + 2 * y).solve(10.0)
    assert solution is not None
    assert solution.bound == pytest.approx(13.5)
    assert solution.bound <= 13.5  # lowered, never raised, by the safety margin


def test_reduced_costs_price_what_a_choice_adds_to_the_bound() -> None:
    # Exactly one of three choices costing 5, 7 and 12: the LP takes the first; taking
    # another adds its cost difference, which is its reduced cost.
    model = cp_model.CpModel()
    xs = [model.new_bool_var(f"x{i}") for i in range(3)]
    model.add_exactly_one(xs)
    solution = relaxation.translate(model, 5 * xs[0] + 7 * xs[1] + 12 * xs[2]).solve(10.0)
    assert solution is not None
    assert solution.bound == pytest.approx(5)
    assert solution.reduced_costs == pytest.approx([0, 2, 7])


ROWS = st.lists(
    st.tuples(
        st.lists(st.integers(-3, 3), min_size=3, max_size=3),
        st.sampled_from([">=", "<=", "=="]),
        st.integers(-3, 4),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(
    ROWS,
    st.lists(st.integers(-5, 5), min_size=3, max_size=3),
    st.lists(st.floats(-10, 10, allow_nan=False), min_size=4, max_size=4),
)
def test_the_lagrangian_bound_holds_for_any_multipliers(
    rows: list[tuple[list[int], str, int]], costs: list[int], duals: list[float]
) -> None:
    """Whatever multipliers GLOP returns, the bound never exceeds an integral optimum."""
    model = cp_model.CpModel()
    xs = [model.new_int_var(0, 2, f"x{i}") for i in range(3)]
    for coefs, sense, rhs in rows:
        expr = sum(c * x for c, x in zip(coefs, xs, strict=True))
        model.add(expr >= rhs if sense == ">=" else expr <= rhs if sense == "<=" else expr == rhs)
    objective = sum(c * x for c, x in zip(costs, xs, strict=True))
    lp = relaxation._lp_model(model, objective)
    _, bound = relaxation.lagrangian(lp, duals[: len(rows)])
    feasible = [
        point
        for point in itertools.product(range(3), repeat=3)
        if all(_meets(coefs, sense, rhs, point) for coefs, sense, rhs in rows)
    ]
    if feasible:
        best = min(sum(c * v for c, v in zip(costs, point, strict=True)) for point in feasible)
        assert bound <= best + 1e-9


def _meets(coefs: list[int], sense: str, rhs: int, point: tuple[int, ...]) -> bool:
    value = sum(c * v for c, v in zip(coefs, point, strict=True))
    return value >= rhs if sense == ">=" else value <= rhs if sense == "<=" else value == rhs


def test_an_unbounded_side_takes_no_multiplier() -> None:
    # A >= row with a negative multiplier would read its (missing) upper side.
    lp = linear_solver_pb2.MPModelProto()
    lp.variable.add(lower_bound=0, upper_bound=1, objective_coefficient=1)
    lp.constraint.add(lower_bound=1, upper_bound=float("inf"), var_index=[0], coefficient=[1])
    reduced, bound = relaxation.lagrangian(lp, [-5.0])
    assert reduced == [1.0] and bound == pytest.approx(0.0, abs=1e-6)


def test_closed_variables_are_fixed_to_zero_in_that_solve_only() -> None:
    model = cp_model.CpModel()
    x, y = model.new_bool_var("x"), model.new_bool_var("y")
    model.add(x + y >= 1)
    translated = relaxation.translate(model, 3 + x + 2 * y)
    closed = translated.solve(10.0, [x.index])
    assert closed is not None
    assert closed.values == pytest.approx([0.0, 1.0])
    assert closed.bound == pytest.approx(5.0)
    # The translation is shared: closing in one solve leaves it as it was.
    again = translated.solve(10.0)
    assert again is not None and again.bound == pytest.approx(4.0)
    assert translated.solve(10.0, [x.index, y.index]) is None  # no plan takes neither
