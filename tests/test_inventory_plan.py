"""Plans and colocation rankings that start from an inventory (issue 35), on the shipped
catalogue: four A800 servers owned in one contracted 40 kW rack at Yancheng
(`examples/owned-a800-what-to-add.yaml`). Figures from catalog/*.yaml, worked in comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from tests.factories.files import write_reqs
from tests.support.shipped import ROOT

EXAMPLE = ROOT / "examples" / "owned-a800-what-to-add.yaml"
A800 = "hgx-a800-8gpu"
YANCHENG = "yancheng-wind-40kw-liquid-ib"


def _bare(tmp_path: Path) -> Path:
    """The example sized to the estimate as it stands (margin 0): with the default 20%
    the 70B service needs 16,800 tokens/s, more than the four A800s give, and with one
    option per workload it rents instead and the A800s are sold."""
    path = tmp_path / "owned-bare.yaml"
    path.write_text(EXAMPLE.read_text(encoding="utf-8") + "margin: 0\n", encoding="utf-8")
    return path


def _plan(gpusolve, path: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    result = gpusolve("plan", "-q", "--format", "json", str(path))
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_four_owned_a800_are_used_and_only_what_is_needed_beyond_them_is_bought(
    gpusolve, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(gpusolve, _bare(tmp_path))
    chat = next(d for d in plan["deployments"] if d["workload"] == "chat-70b")
    assert (chat["server"], chat["servers"], chat["site"]) == (A800, 4, YANCHENG)
    (held,) = plan["inventory"]["servers"]
    assert (held["in_service"], held["sold"], held["idle"]) == (4, 0, 0)
    items = plan["cost"]["breakdown"]["items"]
    capex_items = [i for i in items if i["kind"] == "servers_capex"]
    # The TCO excludes the A800s' purchase (1,200,000 each in the catalogue): no capex line
    # for them, and what is bought serves only the other workload.
    assert all(i["subject"] != A800 for i in capex_items)
    bought = {d["server"] for d in plan["deployments"] if d["workload"] == "assistant-7b"}
    assert {i["subject"] for i in capex_items} <= bought
    assert plan["cost"]["tco"] == sum(i["amount"] for i in items)
    # The contracted rack is paid for 24 of the 36 months: 12 x 32,000 = 384,000 renewed,
    # and nothing else is rented there (the added servers share that rack).
    rent = [i for i in items if i["kind"] == "rack_rent" and i["subject"] == YANCHENG]
    assert sum(i["amount"] for i in rent) == 12 * 32_000
    (contract,) = plan["inventory"]["racks"]
    assert (contract["used"], contract["months_paid"], contract["saved"]) == (1, 24, 768_000)
    # The owned servers still draw power: idle 0.25 x 6.5 kW = 1.625 kW x 730.5 h x PUE
    # 1.18 x 0.58 CNY/kWh = 812 CNY per server-month, x 4 x 36 months.
    idle = [i for i in items if i["kind"] == "energy" and f"idle: 4 x {A800}" in i["detail"]]
    assert [i["amount"] for i in idle] == [4 * 36 * round(1.625 * 730.5 * 1.18 * 0.58)]
    (line,) = [c for c in plan["compliance"] if c["card"] == "a800-80gb-sxm"]
    assert line["use"] == "owned" and "none is bought" in line["verdict"]


def test_owned_servers_that_cannot_do_the_work_are_sold_and_the_plan_tops_up(
    gpusolve, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # Only southern Jiangsu is allowed and the A800s stay where they are (moved south,
    # they would carry the chat service's base load beside a rented burst): in Yancheng
    # (north) they cannot serve, so all four are sold at 350,000 (1,400,000 credited apart
    # from the TCO) and the work goes elsewhere; the Yancheng rack contract is sunk.
    reqs = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    reqs["regions"] = {"allowed": ["jiangsu-south"]}
    reqs["owned"]["servers"][0]["movable"] = False
    plan = _plan(gpusolve, write_reqs(tmp_path, reqs))
    assert {d["workload"] for d in plan["deployments"]} == {"chat-70b", "assistant-7b"}
    assert all(d["server"] != A800 for d in plan["deployments"])
    (held,) = plan["inventory"]["servers"]
    assert (held["in_service"], held["sold"], held["resale"]) == (0, 4, 1_400_000)
    cost = plan["cost"]
    assert cost["resale"] == 1_400_000
    assert cost["objective_value"] == cost["tco"] + cost["penalties"] - 1_400_000
    assert all(i["site"] != YANCHENG for i in cost["breakdown"]["items"])


def test_inventory_mistakes_are_located(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    reqs = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    reqs["owned"]["servers"][0]["server"] = "hgx-a900-8gpu"
    reqs["owned"]["racks"][0]["site"] = "wuxi-nowhere"
    result = gpusolve("plan", "-q", str(write_reqs(tmp_path, reqs)))
    assert result.code == 2
    assert "reqs.yaml:" in result.err and "unknown server 'hgx-a900-8gpu'" in result.err
    assert "did you mean hgx-a800-8gpu" in result.err
    assert "unknown colo site 'wuxi-nowhere'" in result.err
    reqs = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    reqs["owned"]["servers"][0]["count"] = -1
    reqs["owned"]["servers"].append(dict(reqs["owned"]["servers"][0], count=2))
    result = gpusolve("plan", "-q", str(write_reqs(tmp_path, reqs, "r2.yaml")))
    assert result.code == 2 and "r2.yaml:" in result.err
    assert "count: -1 is out of range; expected at least 1" in result.err


def test_colo_takes_the_inventory_and_prints_plans_compliance_lines(
    gpusolve, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # The fleet: the four owned A800s; their contracted rack at Yancheng is paid for 24 of
    # the 36 months: rent (36 - 24) x 32,000 / 36 = 10,666.67 a month on average there.
    reqs = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    fleet = {"horizon_months": 36, "owned": reqs["owned"]}
    path = write_reqs(tmp_path, fleet, "fleet.yaml")
    result = gpusolve("colo", "--format", "json", str(path))
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["fleet"] == {A800: 4}
    row = next(r for r in report["offers"] if r["offer"] == YANCHENG)
    assert row["racks"] == 1 and abs(row["rack_rent_month"] - 12 * 32_000 / 36) < 0.01
    (line,) = report["compliance"]
    assert (line["card"], line["use"]) == ("a800-80gb-sxm", "owned")
    text = gpusolve("colo", str(path)).out
    assert "a800-80gb-sxm (owned): restricted for China; owned already" in text


def test_next_best_plans_why_not_and_scenarios_keep_the_owned_servers_free(
    gpusolve, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # The analyses solve variants of the same model: no alternative, forced plan or
    # scenario ever pays for the owned A800s. (With the 70B demand x 1.5 in a scenario,
    # the hedged plan sells them: no layout splits a workload between owned and rented.)
    result = gpusolve(
        "plan", "-q", "--format", "json", "--top-k", "1", "--why-not", "cloud-8x-h20-jiangsu",
        str(_bare(tmp_path)),
    )  # fmt: skip
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    others = [a["cost"] for a in plan["alternatives"]] + [w["cost"] for w in plan["why_not_plans"]]
    assert len(others) >= 2
    for cost in others:
        assert all(i["subject"] != A800 for i in cost["breakdown"]["items"])
    reqs = yaml.safe_load(_bare(tmp_path).read_text(encoding="utf-8"))
    reqs["scenarios"] = [
        {"name": "nominal", "probability": 0.5},
        {"name": "growth", "probability": 0.5, "demand": {"assistant-7b": 1.5}},
    ]
    hedged = _plan(gpusolve, write_reqs(tmp_path, reqs))
    (held,) = hedged["inventory"]["servers"]
    assert held["in_service"] == 4
    items = hedged["cost"]["breakdown"]["items"]
    assert all(i["subject"] != A800 for i in items if i["kind"] == "servers_capex")
