"""The physics against published results: every case within its tolerance.

The cases, their citations and tolerances are in tests/support/validation_cases.py; the
residual table is printed by `python benchmarks/validation.py` (recorded in benchmarks/README.md).
"""

from __future__ import annotations

import pytest
from tests.support.validation_cases import Case, all_cases
from tests.support.validation_finetune import finetune_cases
from tests.support.validation_serving import serving_cases

CASES = all_cases() + serving_cases() + finetune_cases()
GATED = [c for c in CASES if c.gated]


@pytest.mark.parametrize("case", GATED, ids=[f"{c.group}: {c.name}" for c in GATED])
def test_published_case_within_tolerance(case: Case) -> None:
    got = case.predict()
    residual = got / case.published - 1.0
    assert abs(residual) <= case.tolerance, (
        f"{case.group} / {case.name}: predicted {got:,.4g} {case.unit}, published "
        f"{case.published:,.4g} ({residual:+.1%}, tolerance ±{case.tolerance:.0%}; "
        f"{case.citation})"
    )


def test_the_suite_covers_what_the_issue_names() -> None:
    groups = {c.group for c in GATED}
    for needed in ("Narayanan", "Korthikanti", "ZeRO", "vLLM", "gpt-fast"):
        assert any(g.startswith(needed) for g in groups), needed
    # Narayanan's table has ten models from 1.7B to 1T; Korthikanti's four in two modes.
    assert sum(c.group.startswith("Narayanan") for c in GATED) == 10
    assert sum(c.group == "Korthikanti et al. 2022, Table 5" for c in GATED) == 8


def test_only_the_training_tables_are_fitted_each_on_its_own_family() -> None:
    fitted = {(c.group, c.family) for c in CASES if c.fitted_on}
    assert fitted == {
        ("Narayanan et al. 2021, Table 1", "ampere"),
        ("Korthikanti et al. 2022, Table 5", "ampere"),
        ("NeMo 24.07 on DGX-H100, FP8, pretraining", "hopper"),
    }


def test_hopper_is_checked_on_rows_it_was_not_fitted_on() -> None:
    checks = [c for c in GATED if c.family == "hopper" and not c.fitted_on]
    assert {c.group for c in checks} == {
        "Llama 3 405B (Dubey et al. 2024), Table 4",
        "NeMo 24.07 on DGX-H100, FP8, GPT-3 pretraining (held out)",
    }
    assert len(checks) == 2 + 4


def test_cross_checks_run_and_say_what_they_assume() -> None:
    for c in CASES:
        if not c.gated:
            assert c.assumption and "cross-check" in c.group
            assert c.predict() > 0
