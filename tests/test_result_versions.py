"""Every command's JSON result says what it is (`kind`) and which layout it follows
(`schema_version`), first, so a reader can check both before reading on; and the
catalogue's listing and its item view print Chinese names the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.support.fuzz import EXAMPLES

from gpusolve.models.common import SCHEMA_VERSION
from gpusolve.models.measure import MeasureReport
from gpusolve.models.plan import Plan

Run = Callable[..., Any]
ROOT = Path(__file__).resolve().parents[1]
FINETUNE = str(EXAMPLES / "finetune-7b-deadline.yaml")
FLEET = str(EXAMPLES / "fleets" / "h100-training-cluster.yaml")
PROFILE_LOG = str(ROOT / "tests" / "data" / "dmon" / "l40s_query_stalled.csv")
FAST = ("--time-limit", "5")
PHASED = str(ROOT / "tests" / "corpus" / "valid" / "requirements-phased.yaml")

COMMANDS = [
    ("plan", ("plan", "-q", FINETUNE, *FAST)),
    ("bom", ("plan", "-q", FINETUNE, "--bom", *FAST)),
    ("schedule", ("plan", "-q", PHASED, *FAST)),
    ("schedule-bom", ("plan", "-q", PHASED, "--bom", *FAST)),
    ("estimate", ("estimate", FINETUNE)),
    ("colo", ("colo", FLEET)),
    ("frontier", ("frontier", "-q", FINETUNE, *FAST)),
    ("rules-explain", ("rules", "explain", FINETUNE)),
    ("rules-list", ("rules", "list")),
    ("rule", ("rules", "show", "h29-mixed-schedule-headroom")),
    ("catalog-list", ("catalog", "list")),
    ("catalog-item", ("catalog", "show", "h20-96gb")),
    ("profile", ("profile", PROFILE_LOG)),
]


@pytest.mark.parametrize(("kind", "args"), COMMANDS, ids=[k for k, _ in COMMANDS])
def test_every_json_result_states_its_kind_and_version(
    gpusolve: Run, kind: str, args: tuple[str, ...]
) -> None:
    result = gpusolve(*args, "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert isinstance(data, dict)
    assert list(data)[:2] == ["kind", "schema_version"]
    assert data["kind"] == kind
    assert data["schema_version"] == SCHEMA_VERSION == 1


def test_a_plan_read_back_keeps_its_kind_and_version(gpusolve: Run) -> None:
    result = gpusolve("plan", "-q", FINETUNE, *FAST, "--format", "json")
    plan = Plan.model_validate_json(result.out)  # a strict model: unknown keys would fail
    assert (plan.kind, plan.schema_version) == ("plan", 1)


def test_the_measure_report_states_its_kind_and_version() -> None:
    # `measure` needs PyTorch to run; its report's fields are what it writes.
    fields = MeasureReport.model_fields
    assert list(fields)[:2] == ["kind", "schema_version"]
    assert fields["kind"].default == "measure"


def test_the_listing_and_the_item_print_chinese_names_alike(gpusolve: Run) -> None:
    listed = gpusolve("catalog", "list", "--kind", "cards", "--format", "json").out
    shown = gpusolve("catalog", "show", "hygon-k100-ai", "--format", "json").out
    assert "深算" in listed and "深算" in shown
    assert "\\u6df1" not in listed and "\\u6df1" not in shown
    [card] = [c for c in json.loads(listed)["cards"] if c["id"] == "hygon-k100-ai"]
    assert card["name"] == json.loads(shown)["name"]
