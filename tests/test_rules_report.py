"""`rules explain --format json` is a typed report that matches its published schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gpusolve.models.rules_report import RulesExplainReport
from gpusolve.runs.rules import explain_rules

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES[:2], ids=lambda p: p.stem)
def test_explain_json_matches_its_schema(gpusolve: Callable[..., Any], example: Path) -> None:
    result = gpusolve("rules", "explain", str(example), "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    schema = json.loads((ROOT / "schemas" / "rules-explain.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert RulesExplainReport.model_validate(data).model_dump(mode="json") == data


def test_explain_rules_is_callable_without_the_cli() -> None:
    report = explain_rules(EXAMPLES[0], [], [])
    assert report.workloads, "every example has workloads"
    assert report.rules.in_effect > 0
    for w in report.workloads:
        fired = [t for t in w.trace if t.fired and t.rule != "user"]
        assert all(t.order > 0 for t in fired)
        assert set(w.params) == set(w.param_origin)


def test_schema_rejects_a_report_missing_a_key() -> None:
    schema = json.loads((ROOT / "schemas" / "rules-explain.schema.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"rules": {"files": [], "in_effect": 0}, "workloads": []}, schema)
