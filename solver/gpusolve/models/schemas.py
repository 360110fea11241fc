"""The JSON Schemas gpusolve publishes: one per input kind and per JSON output.

The files in `schemas/` are generated from the pydantic models by `gpusolve schema
--write schemas/`; a test fails when they drift.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from pydantic import BaseModel

# schema name -> (module, model class, title)
REGISTRY: dict[str, tuple[str, str, str]] = {
    "requirements": ("gpusolve.models.requirements", "Requirements", "gpusolve requirements"),
    "catalog": ("gpusolve.models.catalog", "CatalogFile", "gpusolve catalogue file"),
    "rules": ("gpusolve.models.rules", "RuleFile", "gpusolve rule file"),
    "heuristics": ("gpusolve.models.rules", "HeuristicsFile", "gpusolve heuristics catalogue"),
    "fleet": ("gpusolve.models.fleet", "Fleet", "gpusolve fleet (colocation comparison)"),
    "plan": ("gpusolve.models.plan", "Plan", "gpusolve plan output"),
    "schedule": (
        "gpusolve.models.schedule",
        "Schedule",
        "gpusolve plan output with periods (a purchase schedule)",
    ),
    "estimate": ("gpusolve.models.estimate", "EstimateReport", "gpusolve estimate output"),
    "colo": ("gpusolve.models.colo", "ColoReport", "gpusolve colo output"),
    "frontier": ("gpusolve.models.frontier", "Frontier", "gpusolve frontier output"),
    "rules-explain": (
        "gpusolve.models.rules_report",
        "RulesExplainReport",
        "gpusolve rules explain output",
    ),
}

SCHEMA_BASE_URI = "https://gpusolve.invalid/schemas/"


def available() -> dict[str, type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    for name, (module, attr, _) in REGISTRY.items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        model = getattr(mod, attr, None)
        if isinstance(model, type) and issubclass(model, BaseModel):
            models[name] = model
    return models


def schema_for(name: str, model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE_URI}{name}.schema.json",
        "title": REGISTRY[name][2],
        **{k: v for k, v in schema.items() if k != "title"},
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
