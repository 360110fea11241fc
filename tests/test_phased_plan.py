"""`plan` with `periods:` end to end: one period is the single plan byte for byte, a phased
plan prints a schedule that validates against its schema, and timing fields without
periods are located errors."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from tests.support.example_plans import plan_json
from tests.support.phased import CHAT_NORTH
from tests.support.phased import SCHEDULE_SCHEMA as SCHEDULE
from tests.support.shipped import EXAMPLES, ROOT

from gpusolve.models.requirements import Requirements

CHAT = CHAT_NORTH


def _with_one_period(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    horizon = yaml.safe_load(text).get("horizon_months", 36)
    return text + f"periods:\n  length_months: {horizon}\n"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_with_one_period_takes_the_single_plan(path: Path) -> None:
    reqs = Requirements.model_validate(yaml.safe_load(_with_one_period(path)))
    assert reqs.periods is not None and not reqs.phased


def test_one_period_prints_the_single_plan_byte_for_byte(gpusolve, tmp_path: Path) -> None:
    example = ROOT / "examples" / "finetune-7b-deadline.yaml"
    one = tmp_path / "one-period.yaml"
    one.write_text(_with_one_period(example), encoding="utf-8")
    code, base = plan_json(example)
    again = gpusolve("plan", "-q", str(one), "--format", "json")
    assert code == again.code == 0
    assert again.out.replace(str(one), str(example)) == base


def test_a_phased_plan_prints_a_schedule_that_validates(gpusolve, tmp_path: Path) -> None:
    reqs = tmp_path / "phased.yaml"
    grown = CHAT.replace(
        "    target_tokens_per_s: 200\n",
        "    target_tokens_per_s: 200\n    demand_by_period: [1, 4]\n",
    )
    reqs.write_text(grown + "periods:\n  length_months: 3\n", encoding="utf-8")
    result = gpusolve("plan", "-q", str(reqs), "--format", "json")
    assert result.code == 0, result.err
    schedule = json.loads(result.out)
    jsonschema.validate(schedule, SCHEDULE)
    assert schedule["status"] == "optimal"
    assert [p["start_month"] for p in schedule["periods"]] == [0, 3]
    assert [b["name"] for b in schedule["baselines"]] == [
        "buy-now",
        "rent-as-you-go",
        "single-period",
    ]
    for b in schedule["baselines"]:
        assert b["saving"] is None or b["saving"] >= 0  # never dearer than a baseline


def test_timing_fields_without_periods_are_a_located_error(gpusolve, tmp_path: Path) -> None:
    reqs = tmp_path / "late.yaml"
    reqs.write_text(CHAT + "    start_month: 3\n", encoding="utf-8")
    result = gpusolve("plan", "-q", str(reqs))
    assert result.code == 2
    assert str(reqs) in result.err and "periods" in result.err
    assert "Traceback" not in result.err


def test_robust_is_refused_for_a_schedule_with_its_reason(gpusolve, tmp_path: Path) -> None:
    reqs = tmp_path / "phased.yaml"
    reqs.write_text(CHAT + "periods:\n  length_months: 3\n", encoding="utf-8")
    result = gpusolve("plan", "-q", str(reqs), "--robust", "worst")
    assert result.code == 2
    assert "--robust" in result.err and "schedule" in result.err
