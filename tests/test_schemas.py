"""The checked-in JSON Schemas must equal what the models generate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from gpusolve.models.schemas import available, render, schema_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(available()))
def test_checked_in_schema_is_fresh(name: str) -> None:
    model = available()[name]
    path = ROOT / "schemas" / f"{name}.schema.json"
    assert path.is_file(), f"run `gpusolve schema --write schemas/` to create {path.name}"
    assert path.read_text(encoding="utf-8") == render(schema_for(name, model)), (
        f"{path.name} is stale: run `gpusolve schema --write schemas/`"
    )


def test_every_registered_schema_is_available() -> None:
    from gpusolve.models.schemas import REGISTRY

    assert set(available()) == set(REGISTRY)


def test_schemas_are_valid_draft_2020_12() -> None:
    for path in (ROOT / "schemas").glob("*.schema.json"):
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def _schema_line(path: Path) -> str:
    return path.read_text(encoding="utf-8").splitlines()[0]


@pytest.mark.parametrize(
    ("folder", "schema"),
    [("examples", "requirements"), ("catalog", "catalog"), ("rules", None)],
)
def test_shipped_yaml_names_its_schema(folder: str, schema: str | None) -> None:
    files = sorted((ROOT / folder).glob("*.yaml"))
    for path in files:
        expected = schema or ("heuristics" if path.name == "heuristics.yaml" else "rules")
        first = _schema_line(path)
        assert first.startswith("# yaml-language-server: $schema="), path
        assert first.endswith(f"../schemas/{expected}.schema.json"), path
        yaml.safe_load(path.read_text(encoding="utf-8"))
