"""Finance terms of the TCO (issue 24, deliverable 5): residual value, VAT, cloud price
tiers, colocation terms and N+1 spares. The arithmetic is in each test's comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from tests.factories.files import card_entry, colo_entry, server_entry, write_catalog, write_reqs
from tests.support.shipped import ROOT

from gpusolve.models.money import to_money
from gpusolve.optimize import finance


def cloud(offer_id: str, per_hour: float, **terms: Any) -> dict[str, Any]:
    return {
        "id": offer_id,
        "provider": "Test cloud",
        "card": "t80",
        "gpus_per_instance": 8,
        "price_per_hour": per_hour,
        "region": "shanghai",
        "peer_bandwidth_gbs": 900,
        "pricing": {"illustrative": True, "as_of": "2026-11", "source": "test"},
        "source": "test",
        **terms,
    }


def _catalog(tmp: Path, per_hour: float | None = 80, **colo: Any) -> Path:
    """One 10 kW 8-GPU box at 2,000,000 (idle 2.5 kW by the default fraction), one 25 kW
    site (20 kW usable under the default 80% rack reserve; 5,000/rack-month, 100 Mbps at 50,
    PUE 1.4 x 0.7/kWh) and, unless `per_hour` is None, one 8-GPU cloud instance of the same
    card."""
    offer = colo_entry("s", 25, cooling="enhanced_air")
    offer.update(colo)
    clouds = [cloud("rent", per_hour)] if per_hour is not None else []
    return write_catalog(
        tmp,
        "cat.yaml",
        cards=[card_entry("t80", 80)],
        servers=[server_entry("box", "t80", 8, 10.0, 2_000_000)],
        colo_offers=[offer],
        cloud_offers=clouds,
    )


SERVICE = {
    "name": "chat",
    "kind": "inference",
    "model": {"preset": "llama-2-7b"},
    "precision": "fp16",
    "context_len": 2048,
    "concurrency": 4,
    "target_tokens_per_s": 100,
}


def _plan(gpusolve, tmp: Path, reqs: dict[str, Any], catalog: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    path = write_reqs(tmp, {"horizon_months": 36, "workloads": [SERVICE], **reqs}, "r.yaml")
    result = gpusolve(
        "plan", "-q", "--format", "json", str(path), "--no-default-catalog", "--catalog",
        str(catalog),
    )  # fmt: skip
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_residual_fraction_is_straight_line_to_salvage() -> None:
    # 36 of 60 months: 1 - 0.95 x 36/60 = 0.43; at and past 60 months, the 5% salvage.
    assert abs(finance.residual_fraction(36) - 0.43) < 1e-12
    assert finance.residual_fraction(60) == finance.residual_fraction(120) == 0.05
    assert finance.residual_fraction(0) == 1.0


def test_residual_value_flips_rent_to_buy(gpusolve, tmp_path: Path) -> None:
    # A service up every hour of 36 months (26,280 h), on one 8-GPU box or one 8-GPU cloud
    # instance.
    # Buying: 2,000,000 + rent 5,000 x 36 = 180,000 + bandwidth 100 Mbps x 50 x 36 = 180,000
    # + energy: 1,788/month idle (2.5 kW x 730 h x 1.4 x 0.7 = 1,788.5, half-even) x 36 =
    # 64,368 and 7 - 2.5 kW above idle for 26,280 h x 0.98 = 115,895: 2,540,263 CNY.
    # Renting: 80/h x 26,280 h = 2,102,400 CNY: cheaper, without residual value.
    # With it: the box is worth 43% of 2,000,000 = 860,000 after 36 months, so buying
    # costs 1,680,263: now cheaper than renting.
    cat = _catalog(tmp_path)
    without = _plan(gpusolve, tmp_path, {"finance": {"residual_value": False}}, cat)
    assert without["deployments"][0]["mode"] == "cloud"
    assert without["cost"]["tco"] == 2_102_400
    plan = _plan(gpusolve, tmp_path, {}, cat)
    assert plan["deployments"][0]["mode"] == "owned"
    parts = plan["cost"]["breakdown"]
    assert parts["residual_value"] == -860_000
    assert parts["servers_capex"] == plan["cost"]["capex"] == 2_000_000  # the budget's figure
    assert plan["cost"]["tco"] == 2_540_263 - 860_000
    (line,) = [i for i in parts["items"] if i["kind"] == "residual_value"]
    assert (line["quantity"], line["unit_price"]) == (1, -860_000)
    assert "43.0% of 2,000,000" in line["detail"]


# Owned, no residual value, 36 months, one box: capex 2,000,000; one rack 5,000 x 36 =
# 180,000; bandwidth 180,000; energy 1,788 x 36 = 64,368 idle + 115,895 busy = 180,263.
NO_RESIDUAL = {"residual_value": False}


def test_n_plus_1_buys_racks_and_powers_one_spare(gpusolve, tmp_path: Path) -> None:
    # A second box: 2,000,000 more, and 1,788 x 36 = 64,368 more idle energy (it never
    # runs); both fit the one rack (2 x 10 kW of its 20 usable, 8 U). 2,540,263 + 2,064,368
    # = 4,604,631.
    finance_terms = {**NO_RESIDUAL, "spares": "n+1"}
    plan = _plan(gpusolve, tmp_path, {"finance": finance_terms}, _catalog(tmp_path, None))
    assert plan["deployments"][0]["servers"] == 1
    assert plan["sites"][0]["servers"] == {"box": 2} and plan["sites"][0]["racks"] == 1
    assert plan["cost"]["tco"] == 4_604_631
    capex = [i for i in plan["cost"]["breakdown"]["items"] if i["kind"] == "servers_capex"]
    assert sorted((i["unit"], i["quantity"], i["amount"]) for i in capex) == [
        ("server", 1, 2_000_000),
        ("spare server", 1, 2_000_000),
    ]


def test_colocation_minimum_term_and_set_up_fee(gpusolve, tmp_path: Path) -> None:
    # A 48-month minimum term over a 36-month horizon: 5,000 x 48 = 240,000 rent, plus a
    # 20,000 set-up fee once: rack_rent 260,000, TCO 2,540,263 + 60,000 + 20,000.
    cat = _catalog(tmp_path, None, min_term_months=48, setup_fee=20_000)
    plan = _plan(gpusolve, tmp_path, {"finance": NO_RESIDUAL}, cat)
    parts = plan["cost"]["breakdown"]
    assert parts["rack_rent"] == 260_000
    assert plan["cost"]["tco"] == 2_620_263
    units = sorted((i["unit"], i["quantity"]) for i in parts["items"] if i["kind"] == "rack_rent")
    assert units == [("rack-month", 48), ("set-up fee", 1)]


def test_vat_adds_13_percent_to_goods_and_6_to_services(gpusolve, tmp_path: Path) -> None:
    # Goods x 1.13: capex 2,260,000; idle energy 2.5 kW x 730 h x 0.98 x 1.13 = 2,021/month
    # x 36 = 72,756; busy 4.5 kW x 26,280 h x 0.98 x 1.13 = 130,961. Services x 1.06: rent
    # 5,300 x 36 = 190,800; bandwidth 5,300 x 36 = 190,800. TCO 2,845,317.
    terms = {**NO_RESIDUAL, "vat": {}}
    plan = _plan(gpusolve, tmp_path, {"finance": terms}, _catalog(tmp_path, None))
    parts = plan["cost"]["breakdown"]
    assert (parts["servers_capex"], parts["rack_rent"], parts["bandwidth"]) == (
        2_260_000,
        190_800,
        190_800,
    )
    assert parts["energy"] == 72_756 + 130_961
    assert plan["cost"]["tco"] == 2_845_317
    # The cloud rental is a service: 80 x 1.06 x 26,280 h = 2,228,544, now cheaper.
    plan = _plan(gpusolve, tmp_path, {"finance": terms}, _catalog(tmp_path))
    assert plan["deployments"][0]["mode"] == "cloud"
    assert plan["cost"]["tco"] == 2_228_544
    (line,) = plan["cost"]["breakdown"]["items"]
    assert abs(line["unit_price"] - 84.8) < 1e-9 and "incl. VAT 6%" in line["detail"]


def _cloud_only(tmp: Path, **terms: Any) -> Path:
    return write_catalog(
        tmp, "cloud.yaml", cards=[card_entry("t80", 80)], cloud_offers=[cloud("rent", 80, **terms)]
    )


TIERS = {
    "price_per_month": 50_000,
    "reserved": [
        {"term_months": 12, "price_per_month": 45_000},
        {"term_months": 36, "price_per_month": 40_000},
    ],
}


def test_a_rental_takes_the_cheapest_tier_its_use_allows(gpusolve, tmp_path: Path) -> None:
    # A service up all 36 months on one instance: on demand 80 x 26,280 h = 2,102,400;
    # monthly 50,000 x 36 = 1,800,000; reserved 1 year 45,000 x 36 = 1,620,000; reserved 3
    # years 40,000 x 36 = 1,440,000: the 3-year term.
    plan = _plan(gpusolve, tmp_path, {}, _cloud_only(tmp_path, **TIERS))
    assert plan["cost"]["tco"] == 1_440_000
    (line,) = plan["cost"]["breakdown"]["items"]
    assert (line["quantity"], line["unit"], line["unit_price"]) == (36, "instance-month", 40_000)
    assert "reserved 36 months" in line["detail"]
    # Over 24 months a 3-year commitment is still paid in full (1,440,000), the 1-year one
    # twice: 45,000 x 24 = 1,080,000, below monthly 1,200,000 and on demand 1,401,600.
    path = write_reqs(tmp_path, {"horizon_months": 24, "workloads": [SERVICE]}, "r24.yaml")
    result = gpusolve(
        "plan", "-q", "--format", "json", str(path), "--no-default-catalog", "--catalog",
        str(_cloud_only(tmp_path, **TIERS)),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert json.loads(result.out)["cost"]["tco"] == 1_080_000
    # Without tiers, on demand: 2,102,400.
    plan = _plan(gpusolve, tmp_path, {}, _cloud_only(tmp_path))
    assert plan["cost"]["tco"] == 2_102_400


def test_rental_months_for_runs() -> None:
    # One 1,000 h run holds an instance 2 months (730 h each) and a term spans those 2; twelve
    # 100 h runs hold 12 single months and a term must span the whole 36-month horizon.
    assert finance.rental_months(False, 1, 1000, 36) == (2, 2)
    assert finance.rental_months(False, 12, 100, 36) == (12, 36)
    assert finance.rental_months(False, 100, 100, 36) == (36, 36)
    assert finance.rental_months(True, 1, 0, 24) == (24, 24)


def test_spares_hold_in_the_two_stage_scenario_plan(gpusolve, tmp_path: Path) -> None:
    # The scenario model buys servers for every scenario at once: N+1 adds one per (SKU,
    # site) there too, and the plan passes the independent check (exit 0, not 70).
    text = (ROOT / "examples" / "scenarios-demand-growth.yaml").read_text(encoding="utf-8")
    path = tmp_path / "scen.yaml"
    path.write_text(text + "\nfinance:\n  spares: n+1\n", encoding="utf-8")
    result = gpusolve("plan", "-q", "--format", "json", str(path))
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    spares = [i for i in plan["cost"]["breakdown"]["items"] if i["unit"] == "spare server"]
    assert len(spares) == len(plan["sites"]) >= 1


def test_every_line_reads_as_quantity_times_unit_price(gpusolve, tmp_path: Path) -> None:
    # Day/night example with every finance term on, a bandwidth demand and colo terms: each
    # cost line is its quantity x its unit price (whole units, rounded once) with a source.
    text = (ROOT / "examples" / "chat-day-lora-night.yaml").read_text(encoding="utf-8")
    text = text.replace("  - name: chat-13b\n", "  - name: chat-13b\n    bandwidth_mbps: 300\n")
    assert "bandwidth_mbps: 300" in text
    path = tmp_path / "all.yaml"
    path.write_text(text + "\nfinance:\n  spares: n+1\n  vat: {}\n", encoding="utf-8")
    result = gpusolve("plan", "-q", "--format", "json", str(path))
    assert result.code == 0, result.err
    items = json.loads(result.out)["cost"]["breakdown"]["items"]
    units = {i["unit"] for i in items}
    assert {"spare server", "kWh", "server-month idle"} <= units
    assert any(u.startswith("Mbps for") for u in units)
    for i in items:
        assert i["quantity"] is not None and i["unit_price"] is not None and i["source"], i
        assert abs(i["quantity"] * i["unit_price"] - i["amount"]) <= 0.5, i


def test_vat_taxes_the_network_and_storage_like_the_servers(gpusolve, tmp_path: Path) -> None:
    # Switches, links, NICs and storage nodes are goods: with `vat: {}` each such line's
    # unit price is the catalogue's net price x 1.13, rounded once, and says so.
    net: dict[str, float] = {}
    for name, kinds in (
        ("network.yaml", ("switches", "links", "nics")),
        ("storage.yaml", ("storage",)),
    ):
        data = yaml.safe_load((ROOT / "catalog" / name).read_text(encoding="utf-8"))
        net.update({e["id"]: e["price"] for kind in kinds for e in data.get(kind) or []})
    # The 70B example kept to northern Jiangsu (no cloud): it buys a multi-rack fabric and a
    # storage node (the day/night example no longer does: one H20 server, issue 35).
    text = (ROOT / "examples" / "pretrain-70b-infiniband.yaml").read_text(encoding="utf-8")
    path = tmp_path / "vat.yaml"
    path.write_text(text + "\nregions:\n  allowed: [苏北]\nfinance:\n  vat: {}\n", encoding="utf-8")
    result = gpusolve("plan", "-q", "--format", "json", str(path))
    assert result.code == 0, result.err
    items = json.loads(result.out)["cost"]["breakdown"]["items"]
    taxed = [i for i in items if i["kind"] in ("network", "storage") and i["unit_price"]]
    assert {i["kind"] for i in taxed} == {"network", "storage"}
    for i in taxed:
        assert i["unit_price"] == to_money(net[i["subject"]] * 1.13), i
        assert "incl. VAT 13%" in i["detail"], i
