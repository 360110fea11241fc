"""Every shipped example plans; its JSON validates against the plan schema and is stable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from tests.support.example_plans import plan_json
from tests.support.shipped import EXAMPLES, ROOT, example

from gpusolve.load import load_catalog

SCHEMA = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())
CATALOG = load_catalog().catalog


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_plans_and_validates(path: Path) -> None:
    code, out = plan_json(path)
    assert code == 0, out
    plan = json.loads(out)
    jsonschema.validate(plan, SCHEMA)
    assert plan["status"] == "optimal"
    assert plan["solver"]["proven_optimal"] is True
    # One deployment per workload, or a split service's two, whose shares make the whole.
    shares: dict[str, float] = {}
    for d in plan["deployments"]:
        shares[d["workload"]] = shares.get(d["workload"], 0.0) + d["share"]
    assert shares and all(abs(s - 1) < 1e-9 for s in shares.values()), shares
    for d in plan["deployments"]:
        usable = d["card_memory_gb"] * (1 - d["headroom"])
        assert d["usable_memory_gb"] == pytest.approx(usable, abs=0.02)
        assert d["memory_per_gpu_gb"] <= d["usable_memory_gb"] + 1e-6, d
    cost = plan["cost"]
    parts = cost["breakdown"]
    total = sum(
        parts[k]
        for k in (
            "servers_capex",
            "rack_rent",
            "energy",
            "bandwidth",
            "cloud_rental",
            "network",
            "storage",
        )
    )
    assert abs(total - cost["tco"]) < 1.0
    assert all(r["source"].startswith("H") for r in plan["rules_fired"])
    for site in plan["sites"]:
        assert len(site["fill_kw"]) == len(site["fill"]) == site["racks"]
        assert all(kw <= site["rack_kw"] + 1e-9 for kw in site["fill_kw"])
    # Issue 35: no shipped preference outweighs the money, and every binding claim is tight.
    assert cost["penalties"] <= cost["tco"]
    for bound in plan["binding"]:
        assert_tight(bound, plan, example(path.name))


def assert_tight(bound: dict[str, Any], plan: dict[str, Any], reqs: dict[str, Any]) -> None:
    """A binding constraint's figures against its limit: a money cap is spent under and not
    exceeded; every rack of a site is taken; a power-bound site's fullest rack has no power
    left for one more of its servers, and the site uses more than one rack."""
    kind, _, where = bound["name"].partition(":")
    used, limit = bound["used"], bound["limit"]
    budget = reqs.get("budget", {})
    if kind in ("capex", "monthly", "total"):
        assert limit == budget[f"{kind}_max"]
        assert 0 < used <= limit + 1e-6, bound
    elif kind == "racks":
        assert used >= limit, bound
    elif kind == "rack_power":
        [site] = [s for s in plan["sites"] if s["offer"] == where]
        usable = site["rack_kw"] - site["reserved_kw"]
        smallest = min(CATALOG.servers[k].power_kw for k in site["servers"])
        assert site["racks"] > 1 and used + smallest > usable + 1e-9, bound
    else:
        assert kind == "rack_space", bound


def test_same_input_gives_byte_identical_json(gpusolve) -> None:
    path = str(ROOT / "examples" / "south-latency-north-batch.yaml")
    first = gpusolve("plan", "-q", path, "--format", "json")
    second = gpusolve("plan", "-q", path, "--format", "json")
    assert first.code == 0 and first.out == second.out


@pytest.mark.parametrize("fmt", ["text", "yaml", "markdown"])
def test_other_formats_render(gpusolve, fmt: str) -> None:
    result = gpusolve("plan", "-q", str(EXAMPLES[0]), "--format", fmt)
    assert result.code == 0, result.err
    assert "TCO" in result.out or "tco" in result.out or "Total cost" in result.out


def test_output_file_is_written_whole(gpusolve, tmp_path: Path) -> None:
    out = tmp_path / "plan.md"
    result = gpusolve("plan", "-q", str(EXAMPLES[0]), "--format", "markdown", "-o", str(out))
    assert result.code == 0 and result.out == ""
    assert out.read_text().startswith("# GPU procurement plan")
    assert [p.name for p in tmp_path.iterdir()] == ["plan.md"]  # no temp files left
