"""Finance terms of the TCO (issue 24, deliverable 5): residual value, VAT, cloud price
tiers, colocation terms and N+1 spares. The arithmetic is in each test's comments."""

from __future__ import annotations

import json
import re
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
    # Renting: 80/h x 26,280 h = 2,102,400 CNY: cheaper, without residual value (the
    # default). With book value: the box is worth 43% of 2,000,000 = 860,000 after 36
    # months, so buying nets 1,680,263: now cheaper than renting. The TCO stays what is
    # spent (2,540,263); the credit stands beside it and only the objective subtracts it.
    cat = _catalog(tmp_path)
    without = _plan(gpusolve, tmp_path, {}, cat)
    assert without["deployments"][0]["mode"] == "cloud"
    assert without["cost"]["tco"] == 2_102_400 and without["cost"]["horizon_resale"] is None
    plan = _plan(gpusolve, tmp_path, {"finance": {"residual_value": True}}, cat)
    assert plan["deployments"][0]["mode"] == "owned"
    cost = plan["cost"]
    parts = cost["breakdown"]
    assert parts["servers_capex"] == cost["capex"] == 2_000_000  # the budget's figure
    assert cost["tco"] == 2_540_263
    assert cost["tco"] == cost["capex"] + round(cost["monthly_opex"] * 36)
    assert cost["horizon_resale"]["amount"] == 860_000 and cost["horizon_resale"]["month"] == 36
    assert cost["objective_value"] == 2_540_263 - 860_000 + cost["penalties"]
    (line,) = cost["horizon_resale"]["lines"]
    assert (line["count"], line["unit_value"], line["server"]) == (1, 860_000, "box")
    assert "43.0% of 2,000,000" in line["detail"] and "book value" in line["source"]
    # Never a negative line of the TCO or of the bill of materials.
    assert all(i["amount"] >= 0 for i in parts["items"])
    assert all(ln["amount"] >= 0 for ln in plan["bom"])


def test_resale_curve_sets_the_credit(gpusolve, tmp_path: Path) -> None:
    # A user's curve: 60% at month 12, 20% at month 48; at 36 months 60 - 40 x 24/36 =
    # 33.33...%, so the box is credited 2,000,000 x 1/3 = 666,667 (rounded half-even).
    # 2,540,263 - 666,667 = 1,873,596 still beats renting (2,102,400).
    curve = [{"month": 12, "fraction": 0.6}, {"month": 48, "fraction": 0.2}]
    terms = {"residual_value": True, "resale_curve": curve}
    plan = _plan(gpusolve, tmp_path, {"finance": terms}, _catalog(tmp_path))
    cost = plan["cost"]
    assert plan["deployments"][0]["mode"] == "owned"
    assert cost["tco"] == 2_540_263 and cost["horizon_resale"]["amount"] == 666_667
    assert "resale curve" in cost["horizon_resale"]["basis"]


def test_resale_fraction_interpolates_from_new() -> None:
    curve = ((12, 0.6), (48, 0.2))
    assert finance.resale_fraction(0, curve) == 1.0
    assert abs(finance.resale_fraction(6, curve) - 0.8) < 1e-12  # (0, 1) to (12, 0.6)
    assert abs(finance.resale_fraction(30, curve) - 0.4) < 1e-12
    assert finance.resale_fraction(60, curve) == 0.2
    off = finance.Terms()
    assert finance.credit_fraction(36, off) == 0.0  # off by default


def test_resale_curve_must_reach_the_horizon(gpusolve, tmp_path: Path) -> None:
    curve = [{"month": 12, "fraction": 0.6}, {"month": 24, "fraction": 0.4}]
    reqs = {"horizon_months": 36, "workloads": [SERVICE]}
    reqs["finance"] = {"residual_value": True, "resale_curve": curve}
    path = write_reqs(tmp_path, reqs, "r.yaml")
    result = gpusolve("plan", "-q", str(path))
    assert result.code == 2
    assert "resale_curve ends at month 24" in result.err and "Traceback" not in result.err
    curve.reverse()
    path = write_reqs(tmp_path, reqs, "r2.yaml")
    result = gpusolve("plan", "-q", str(path))
    assert result.code == 2 and "months must increase" in result.err


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


def test_resale_credit_is_printed_beside_the_tco(gpusolve, tmp_path: Path) -> None:
    # The text a finance reader adds up: the TCO (capex + opex), the credit on its own line
    # with its month, no negative server row in the breakdown or the bill of materials.
    reqs = {"horizon_months": 36, "workloads": [SERVICE], "finance": {"residual_value": True}}
    path = write_reqs(tmp_path, reqs, "r.yaml")
    cat = _catalog(tmp_path)
    result = gpusolve("plan", "-q", str(path), "--no-default-catalog", "--catalog", str(cat))
    assert result.code == 0, result.err
    text = result.out
    assert "TCO over 36 months: 2,540,263 CNY" in text
    assert "resale credit 860,000 CNY (if sold at month 36; not in the TCO)" in text
    assert "objective TCO - resale = 1,680,263 CNY" in text
    assert "total = TCO over the horizon: 2,540,263 CNY" in text
    assert "if the servers are sold at month 36 (not in the TCO" in text
    assert not re.search(r"^  server .*-\d", text, re.M)  # no negative server row
    assert "residual value" not in text


def test_energy_and_bandwidth_lines_cite_their_own_price_sources(gpusolve, tmp_path: Path) -> None:
    # The offer's own notes for its power and bandwidth prices, where it gives them; the
    # rack rent keeps citing the offer's pricing; no line cites the server's price source.
    power = {"illustrative": False, "as_of": "2026-10", "source": "State Grid Jiangsu tariff"}
    line = {"illustrative": True, "as_of": "2026-09", "source": "BGP quote, 50/Mbps-month"}
    cat = _catalog(tmp_path, None, power_pricing=power, bandwidth_pricing=line)
    plan = _plan(gpusolve, tmp_path, {}, cat)
    items = plan["cost"]["breakdown"]["items"]
    sources = {i["kind"]: set() for i in items}
    for i in items:
        sources[i["kind"]].add(i["source"])
    assert sources["energy"] == {"State Grid Jiangsu tariff (as of 2026-10)"}
    assert sources["bandwidth"] == {"BGP quote, 50/Mbps-month (as of 2026-09)"}
    assert all(i["illustrative"] is False for i in items if i["kind"] == "energy")
    assert sources["rack_rent"] == {"test (as of 2026-11)"}
    # Without them, each line names the offer's figure it uses.
    plain = _plan(gpusolve, tmp_path, {}, _catalog(tmp_path, None))
    energy = {i["source"] for i in plain["cost"]["breakdown"]["items"] if i["kind"] == "energy"}
    assert energy == {
        "power price 0.7/kWh, PUE 1.4: figures of colo offer s (test) (as of 2026-11)"
    }
