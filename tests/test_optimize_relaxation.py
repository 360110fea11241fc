"""The LP relaxation the warm start reads: rows, literals and integrality as an LP."""

from __future__ import annotations

import pytest
from ortools.sat.python import cp_model

from gpusolve.optimize import relaxation


def test_integrality_is_dropped() -> None:
    # At most 1.5 of three Booleans: the LP takes 1.5 of them, an integer plan only 1.
    model = cp_model.CpModel()
    xs = [model.new_bool_var(f"x{i}") for i in range(3)]
    model.add(2 * sum(xs) <= 3)
    values = relaxation.lp_values(model, -sum(xs), 10.0)
    assert values is not None
    assert sum(values) == pytest.approx(1.5)


def test_negated_literals_read_as_one_minus_the_variable() -> None:
    # at least one of (x, not y) means x >= y; minimising x - 3y takes both to 1. Read as a
    # plain sum it would allow y = 1, x = 0 (objective -3).
    model = cp_model.CpModel()
    x, y = model.new_bool_var("x"), model.new_bool_var("y")
    model.add_bool_or([x, ~y])
    values = relaxation.lp_values(model, x - 3 * y, 10.0)
    assert values == pytest.approx([1.0, 1.0])


def test_exactly_one_is_an_equality() -> None:
    model = cp_model.CpModel()
    a, b = model.new_bool_var("a"), model.new_bool_var("b")
    model.add_exactly_one([a, ~b])  # a + (1 - b) == 1, so a == b
    values = relaxation.lp_values(model, 2 * b - a, 10.0)  # minimised at a == b == 0
    assert values == pytest.approx([0.0, 0.0])
    values = relaxation.lp_values(model, a - 2 * b, 10.0)  # minimised at a == b == 1
    assert values == pytest.approx([1.0, 1.0])


def test_an_infeasible_lp_gives_no_values() -> None:
    model = cp_model.CpModel()
    x = model.new_int_var(0, 3, "x")
    model.add(x >= 5)
    assert relaxation.lp_values(model, x, 10.0) is None


def test_enforced_rows_are_left_out() -> None:
    # x <= 0 only when z: dropped, the LP may take x = 1 with z = 1.
    model = cp_model.CpModel()
    x, z = model.new_bool_var("x"), model.new_bool_var("z")
    model.add(x <= 0).only_enforce_if(z)
    model.add(z == 1)
    values = relaxation.lp_values(model, -x, 10.0)
    assert values is not None and values[0] == pytest.approx(1.0)
