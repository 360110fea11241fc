"""`gpusolve colo`: rank colocation offers for a fleet, with reasons for those that can't."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from tests.support.shipped import ROOT

FLEET = ROOT / "examples" / "fleets" / "h100-training-cluster.yaml"
SCHEMA = json.loads((ROOT / "schemas" / "colo.schema.json").read_text())


def report(gpusolve, path: Path, code: int = 0) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    result = gpusolve("colo", str(path), "--format", "json")
    assert result.code == code, result.err
    data: dict[str, Any] = json.loads(result.out)
    jsonschema.validate(data, SCHEMA)
    return data


def write_fleet(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def test_example_ranks_feasible_offers_by_total_cost(gpusolve) -> None:
    data = report(gpusolve, FLEET)
    feasible = [r for r in data["offers"] if r["feasible"]]
    refused = [r for r in data["offers"] if not r["feasible"]]
    assert feasible and refused
    totals = [r["tco"] for r in feasible]
    assert totals == sorted(totals)
    for r in feasible:
        # The bill adds up, and the racks hold the whole fleet within their power.
        assert (
            abs(r["monthly"] - (r["rack_rent_month"] + r["energy_month"] + r["bandwidth_month"]))
            < 1
        )
        assert abs(r["tco"] - r["monthly"] * data["horizon_months"]) < 1
        assert r["racks"] == len(r["fill"]) <= r["racks_available"]
        held: dict[str, int] = {}
        for fill in r["fill"]:
            for server, n in fill.items():
                held[server] = held.get(server, 0) + n
        assert held == data["fleet"]
    assert all(r["reasons"] for r in refused)


def test_reasons_name_cooling_power_and_fabric(gpusolve) -> None:
    by_id = {r["offer"]: r for r in report(gpusolve, FLEET)["offers"]}
    # 8-GPU H100 boards cannot go in plain air racks (they need enhanced air or liquid).
    assert "these are air" in " ".join(by_id["nanjing-jiangning-4.4kw-air"]["reasons"])
    # Four servers running one job need an RDMA fabric; a 12 kW Ethernet site has none.
    assert "InfiniBand or RoCE" in " ".join(by_id["yancheng-coastal-12kw"]["reasons"])


def test_northern_jiangsu_is_cheaper_for_the_same_small_fleet(gpusolve, tmp_path: Path) -> None:
    # The shipped catalogue prices northern racks and power below southern ones (H40): the
    # cheapest northern home for two 4-GPU boxes costs less than the cheapest southern one.
    fleet = write_fleet(
        tmp_path,
        {"servers": [{"server": "r760xa-4gpu-l40s", "count": 2}], "bandwidth_mbps": 50},
    )
    offers = [r for r in report(gpusolve, fleet)["offers"] if r["feasible"]]
    north = min(r["tco"] for r in offers if r["region"] == "jiangsu-north")
    south = min(r["tco"] for r in offers if r["region"] == "jiangsu-south")
    assert north < south


def test_more_servers_than_racks_available(gpusolve, tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path, {"servers": [{"server": "hgx-h100-8gpu", "count": 200}]})
    offers = report(gpusolve, fleet, code=1)["offers"]  # no offer can host it: exit 1
    assert not any(r["feasible"] for r in offers)
    assert any("racks available" in " ".join(r["reasons"]) for r in offers)


def test_regions_limit_the_offers(gpusolve, tmp_path: Path) -> None:
    fleet = write_fleet(
        tmp_path,
        {"servers": [{"server": "r760xa-4gpu-l40s", "count": 1}], "regions": ["苏北"]},
    )
    offers = report(gpusolve, fleet)["offers"]
    assert {r["region"] for r in offers if r["feasible"]} == {"jiangsu-north"}


def test_unknown_server_is_an_input_error(gpusolve, tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path, {"servers": [{"server": "hgx-h100-8gpux", "count": 1}]})
    result = gpusolve("colo", str(fleet))
    assert result.code == 2
    assert f"{fleet}:" in result.err and "did you mean hgx-h100-8gpu" in result.err
