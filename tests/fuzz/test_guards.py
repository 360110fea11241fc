"""The numeric guards behind the fuzz contract: the int64 scale check before every model
build, the objective recomputed outside the model, and the harness judging outcomes."""

from __future__ import annotations

import dataclasses

import pytest
from tests.support.fuzz import Outcome, check_outcome, is_nonsense
from tests.support.optimize_reference import random_instance

from gpusolve.errors import InputError
from gpusolve.optimize import guard
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.model import build
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check


def _with_capex(capex: int) -> object:
    instance = random_instance(3)
    sku_id = next(iter(instance.skus))
    skus = dict(instance.skus)
    skus[sku_id] = dataclasses.replace(skus[sku_id], capex=capex)
    return dataclasses.replace(instance, skus=skus), sku_id


def test_an_instance_beyond_int64_is_an_input_error_naming_the_figure() -> None:
    instance, sku_id = _with_capex(2**62)
    with pytest.raises(InputError) as caught:
        build(instance)  # type: ignore[arg-type]
    assert f"servers[{sku_id}].price" in str(caught.value)


def test_the_limit_is_on_the_total_an_instance_can_reach() -> None:
    instance, _ = _with_capex(1)
    totals = guard.terms(instance)  # type: ignore[arg-type]
    assert sum(t.total for t in totals) == guard._total(instance) <= guard.LIMIT  # type: ignore[arg-type]
    guard.check_scale(instance)  # type: ignore[arg-type]
    assert guard.LIMIT < 2**63 // 1000  # headroom below int64 for CP-SAT's own sums


def test_objective_is_recomputed_outside_the_model() -> None:
    instance = random_instance(6)  # a min-tco instance with a plan
    assert instance.objective == "min-tco"
    solution = solve(instance, SolveConfig(time_limit_s=600, work_limit=10))
    assert solution.status == "optimal" and check(instance, solution) == []
    assert solution.objective_value is not None
    wrong = dataclasses.replace(solution, objective_value=solution.objective_value + 1)
    assert any("objective" in p for p in check(instance, wrong))


def _outcome(code: int, err: str = "", out: str = "") -> Outcome:
    return Outcome(("plan", "x.yaml"), code, out, err, 0.1)


@pytest.mark.parametrize(
    ("outcome", "nonsense"),
    [
        (_outcome(2, "Traceback (most recent call last):\n  ..."), False),
        (_outcome(70, "gpusolve: internal error (ValueError: x)"), False),
        (_outcome(0, "", "Plan (min-tco, proven optimal)"), True),
        (_outcome(2, ""), False),
        (_outcome(1, ""), False),
        (_outcome(-6, ""), False),
    ],
    ids=[
        "traceback",
        "internal-error",
        "exit-0-on-nonsense",
        "exit-2-silent",
        "exit-1-silent",
        "abort",
    ],
)
def test_the_harness_fails_what_it_must(outcome: Outcome, nonsense: bool) -> None:
    with pytest.raises(AssertionError):
        check_outcome(outcome, nonsense=nonsense)


def test_nonsense_is_judged_against_the_original_value() -> None:
    assert is_nonsense(3.0e9, float("nan")) and is_nonsense(24, -1) and is_nonsense(0.7, 1e300)
    assert not is_nonsense(0, -1)  # a field that was 0 may legitimately be negative
    assert not is_nonsense("bf16", -1) and not is_nonsense(True, 1e300)
