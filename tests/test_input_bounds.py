"""Bounds on figures a user can write where nothing bounded them (issue 39): integers in
rules beyond CEL's 64 bits, `set:` values beyond any parameter, and the comparisons that
met them (exit 70 before)."""

from __future__ import annotations

import math

import pytest
from tests.factories.instances import ONE, instance, owned

from gpusolve.models.params import MAX_MAGNITUDE, check_value
from gpusolve.optimize.explain import relaxation
from gpusolve.optimize.ir import Requirement
from gpusolve.rules.bindings import as_double
from gpusolve.rules.check import number_literal_problem
from gpusolve.rules.compile import compile_predicate
from gpusolve.rules.declarations import variables_for
from gpusolve.rules.parse import CelError


@pytest.mark.parametrize(
    ("kind", "text", "ok"),
    [
        ("INT_LIT", str(2**63 - 1), True),
        ("INT_LIT", str(2**63), False),
        ("INT_LIT", "0x7fffffffffffffff", True),
        ("INT_LIT", "0x8000000000000000", False),
        ("UINT_LIT", f"{2**64 - 1}u", True),
        ("UINT_LIT", f"{2**64}u", False),
        ("INT_LIT", "0" * 30 + "1", True),  # leading zeros are not magnitude
        ("INT_LIT", "9" * 5000, False),  # beyond what Python converts: no conversion tried
        ("FLOAT_LIT", "1e308", True),
        ("FLOAT_LIT", "1e309", False),
    ],
)
def test_number_literals_are_bounded_as_cel_bounds_them(kind: str, text: str, ok: bool) -> None:
    assert (number_literal_problem(kind, text) is None) == ok


def test_a_400_digit_literal_is_a_compile_error_at_its_column() -> None:
    with pytest.raises(CelError) as caught:
        compile_predicate("server.gpus < " + "9" * 400, variables_for("server"))
    assert "64-bit int range" in caught.value.message
    assert caught.value.column == 15


def test_numbers_compare_as_doubles_without_overflow() -> None:
    assert as_double(10**400) == math.inf
    assert as_double(-(10**400)) == -math.inf
    assert as_double(3) == 3.0


@pytest.mark.parametrize(
    "value", [10**400, -(10**400), 1e300, float("nan"), float("inf"), MAX_MAGNITUDE + 1]
)
def test_a_set_value_beyond_any_parameter_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="checkpoint_interval_steps"):
        check_value("checkpoint_interval_steps", value)


def test_a_set_value_at_the_bound_is_kept() -> None:
    assert check_value("checkpoint_interval_steps", MAX_MAGNITUDE) == MAX_MAGNITUDE


def test_a_deadline_move_beyond_cp_sat_integers_is_not_computed() -> None:
    """The explain path's guard: times beyond the model's integers give no relaxation
    (printed "relax it") instead of an out-of-range coefficient (exit 70)."""
    inst = instance(
        ("w",),
        (owned("slow", "w", 1, violates=frozenset({"deadline:w"})),),
        requirements={"deadline:w": Requirement("deadline:w", "deadline of 72 h for w", 5)},
    )
    huge = {o.key: 10**300 for o in inst.owned}
    assert relaxation(inst, "deadline:w", ONE, huge, 72 * 3600) is None
    found = relaxation(inst, "deadline:w", ONE, {o.key: 100 * 3600 for o in inst.owned}, 72 * 3600)
    assert found is not None and found.needed == 100 * 3600
