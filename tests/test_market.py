"""Export control and market: in market cn, restricted cards are not bought unless allowed.

The facts (each card's `export_cn`) come from the catalogue; the market from the
requirements (default cn when every region the run may use is in China).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.factories.files import write_reqs
from tests.factories.policy import NoRules
from tests.support.shipped import ROOT, example, owned_only, shipped

from gpusolve.candidates.market import (
    MarketPolicy,
    MarketView,
    apply_market,
    exclusions,
    purchase_block,
    resolve_market,
)
from gpusolve.load import load_catalog
from gpusolve.models.catalog import RESTRICTED_STATES, Catalog
from gpusolve.models.requirements import Requirements

PRETRAIN = "pretrain-70b-infiniband.yaml"
# Every shipped card the US rules restrict for sale into China, as the catalogue says.
RESTRICTED = {c["id"] for c in shipped("cards") if c["export_cn"]["status"] in RESTRICTED_STATES}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog().catalog


def _reqs(**extra: Any) -> Requirements:
    data = {
        "workloads": [{"name": "s", "kind": "inference", "model": {"preset": "llama-2-7b"}}],
        **extra,
    }
    data["workloads"][0]["target_tokens_per_s"] = 100
    return Requirements.model_validate(data)


def _plan(gpusolve: Any, path: Path, *args: str) -> dict[str, Any]:
    result = gpusolve("plan", "-q", str(path), "--format", "json", *args)
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_market_defaults_to_cn_when_every_region_is_in_china(catalog: Catalog) -> None:
    assert resolve_market(_reqs(), catalog).market == "cn"  # shipped offers: all in China
    assert resolve_market(_reqs(regions={"allowed": ["苏北", "Shanghai"]}), catalog).market == "cn"
    assert resolve_market(_reqs(regions={"allowed": ["Suzhou"]}), catalog).market == "cn"
    stated = resolve_market(_reqs(market="global"), catalog)
    assert (stated.market, stated.basis) == ("global", "stated in the requirements (market:)")
    abroad = catalog.model_copy(
        update={
            "cloud_offers": {
                **catalog.cloud_offers,
                "sg": next(iter(catalog.cloud_offers.values())).model_copy(
                    update={"id": "sg", "region": "singapore"}
                ),
            }
        }
    )
    assert resolve_market(_reqs(), abroad).market == "global"
    assert resolve_market(_reqs(regions={"allowed": ["singapore"]}), abroad).market == "global"
    assert resolve_market(_reqs(regions={"allowed": ["江苏"]}), abroad).market == "cn"


def test_only_purchases_of_restricted_cards_are_blocked(catalog: Catalog) -> None:
    cn = MarketView("cn", "test")
    blocked = {e.item for e in exclusions(catalog, cn)}
    expected = {s.id for s in catalog.servers.values() if s.card in RESTRICTED}
    assert blocked == expected and blocked
    assert exclusions(catalog, MarketView("global", "test")) == []
    allowed = MarketView("cn", "test", frozenset({"b200", "hgx-h100-8gpu"}))
    still = {e.item for e in exclusions(catalog, allowed)}
    assert still == expected - {"hgx-b200-8gpu", "hgx-h100-8gpu"}
    # The policy fails the server, never the card: renting the same card stays possible.
    policy = MarketPolicy(NoRules(), catalog, cn)
    server = catalog.servers["hgx-b200-8gpu"]
    (hit,) = policy.failed("server", server, {})
    assert hit.rule == "export-cn" and "b200 is restricted for China" in hit.detail
    assert policy.failed("card", catalog.cards["b200"], {}) == []
    cloud = next(o for o in catalog.cloud_offers.values() if o.card in RESTRICTED)
    assert policy.failed("cloud", cloud, {}) == []
    assert purchase_block(catalog.cards["l20"], catalog.servers["pcie8-l20"], cn) is None
    assert apply_market({"w": NoRules()}, catalog, MarketView("global", "t"))["w"] == (NoRules())


def test_70b_in_market_cn_buys_no_restricted_card_and_says_why(gpusolve) -> None:
    plan = _plan(gpusolve, ROOT / "examples" / PRETRAIN)
    assert plan["market"] == "cn"
    bought = {d["card"] for d in plan["deployments"] if d["mode"] == "owned"}
    assert not bought & RESTRICTED
    excluded = {e["item"]: e for e in plan["excluded"]}
    assert "hgx-b200-8gpu" in excluded
    assert excluded["hgx-b200-8gpu"]["status"] == "restricted"
    assert "2023-10-17" in excluded["hgx-b200-8gpu"]["rule"]
    assert "allow_restricted" in excluded["hgx-b200-8gpu"]["reason"]
    used = {d["card"] for d in plan["deployments"]}
    assert {c["card"] for c in plan["compliance"]} == used
    for line in plan["compliance"]:
        if line["card"] in RESTRICTED:
            assert line["use"] == "rented" and "rented from a provider in China" in line["verdict"]
        assert line["as_of"] and line["source"]


def test_with_allow_restricted_the_70b_plan_may_buy_them(gpusolve, tmp_path: Path) -> None:
    # Without cloud offers (renting an H800 is cheapest otherwise), so that buying is the way.
    data = example(PRETRAIN)
    data["allow_restricted"] = sorted(RESTRICTED)
    plan = _plan(gpusolve, write_reqs(tmp_path, data), *owned_only())
    assert plan["excluded"] == []
    bought = {d["card"] for d in plan["deployments"] if d["mode"] == "owned"}
    assert bought & RESTRICTED, plan["deployments"]
    verdicts = {c["card"]: c["verdict"] for c in plan["compliance"]}
    assert all("allow_restricted" in verdicts[c] for c in bought & RESTRICTED)


def test_why_not_names_the_restriction_and_text_prints_compliance(gpusolve) -> None:
    path = str(ROOT / "examples" / PRETRAIN)
    result = gpusolve("plan", "-q", path, "--why-not", "b200")
    assert result.code == 0, result.err
    why = result.out.split("Why not", 1)[1]
    assert "hgx-b200-8gpu rejected: rule export-cn" in why
    assert "b200 is restricted for China" in why
    assert "Compliance: market cn" in result.out
    assert "Sources (catalogue file:line" in result.out
    # --no-sensitivity: the memo's default ranges are no part of these sections.
    md = gpusolve("plan", "-q", path, "--format", "markdown", "--no-sensitivity")
    assert "## Export compliance" in md.out and "Not bought: **b200**" in md.out
    assert "## Sources" in md.out and "catalog/cards.yaml:" in md.out


def test_a_user_catalogue_can_patch_the_export_status(gpusolve, tmp_path: Path) -> None:
    memo = tmp_path / "legal.yaml"
    memo.write_text(
        yaml.safe_dump(
            {
                "patch": [
                    {"id": "b200", "export_cn": {"status": "not-restricted", "as_of": "2026-12"}}
                ]
            }
        )
    )
    path = ROOT / "examples" / PRETRAIN
    plan = _plan(gpusolve, path, "--catalog", str(memo))
    assert "hgx-b200-8gpu" not in {e["item"] for e in plan["excluded"]}
    assert "hgx-h100-8gpu" in {e["item"] for e in plan["excluded"]}


def test_when_the_market_leaves_nothing_to_buy_the_fix_is_allow_restricted(
    gpusolve, tmp_path: Path
) -> None:
    # Only restricted servers on offer and no cloud: the market leaves nothing to buy.
    servers = [s for s in shipped("servers") if s["card"] in RESTRICTED]
    only = tmp_path / "servers.yaml"
    only.write_text(yaml.safe_dump({"currency": "CNY", "servers": servers}))
    path = str(ROOT / "examples" / PRETRAIN)
    result = gpusolve("plan", "-q", path, *owned_only(only), "--format", "json")
    assert result.code == 1
    conflicting = json.loads(result.out)["infeasibility"]["conflicting"]
    export = [c for c in conflicting if c["requirement"] == "rule:export-cn"]
    assert export and "allow_restricted" in (export[0]["suggestion"] or "")


def test_in_market_cn_the_china_catalogue_offers_domestic_and_licensed_servers(
    catalog: Catalog,
) -> None:
    # Issue 35: the H20 (licensed since 2025-07) and the domestic accelerators are buyable.
    cn = MarketView("cn", "test")
    blocked = {e.item for e in exclusions(catalog, cn)}
    buyable = set(catalog.servers) - blocked
    assert {"hgx-h20-8gpu", "atlas-800t-a2", "atlas-800t-a3", "pcie8-l20"} <= buyable
    assert {"pcie8-rtx4090d", "pcie8-mlu370-x8"} <= buyable
    # The second batch: GeForce RTX 5090 D boxes, Hygon DCU and Kunlunxin XPU servers.
    assert {"pcie8-rtx5090d", "pcie8-rtx5090d-v2"} <= buyable
    assert {"pcie8-hygon-k100ai", "kunlunxin-p800-8oam"} <= buyable
    h20 = catalog.cards["h20-96gb"].export_cn
    assert h20 is not None and h20.status == "licensed" and not h20.restricted
    assert "2025-07" in h20.rule and "2025-04" in h20.rule
    # A legal team that reads it otherwise patches it back; the server is then excluded.
    strict = h20.model_copy(update={"status": "licence-required"})
    card = catalog.cards["h20-96gb"].model_copy(update={"export_cn": strict})
    assert purchase_block(card, catalog.servers["hgx-h20-8gpu"], cn) is not None


def test_catalog_list_market_cn_shows_what_can_be_bought_and_why_not(gpusolve) -> None:
    result = gpusolve("catalog", "list", "--market", "cn", "--kind", "servers")
    assert result.code == 0, result.err
    head, rest = result.out.split("\n", 1)
    listed, left_out = rest.split("not bought in market cn", 1)
    shipped_servers = {s["id"]: s for s in shipped("servers")}
    n_out = sum(1 for s in shipped_servers.values() if s["card"] in RESTRICTED)
    assert head.startswith(f"market cn: {len(shipped_servers) - n_out} server(s) can be bought")
    assert f"{n_out} left out" in head
    assert "atlas-800t-a3" in listed and "hgx-h100-8gpu" not in listed
    assert "hgx-h100-8gpu" in left_out and "restricted (US BIS IFR of 2022-10-07" in left_out
    # Prices show their labelled range and date.
    assert "1,200,000 CNY (1,100,000-1,300,000) illustrative 2026-11" in listed
    data = json.loads(gpusolve("catalog", "list", "--market", "cn", "--format", "json").out)
    assert data["market"] == "cn" and len(data["excluded"]) == n_out
    assert not {s["card"] for s in data["servers"]} & RESTRICTED
    everything = json.loads(gpusolve("catalog", "list", "--format", "json").out)
    assert len(everything["servers"]) == len(shipped_servers) and "excluded" not in everything


def test_plan_header_counts_the_servers_the_market_excluded(gpusolve) -> None:
    result = gpusolve("plan", "-q", str(ROOT / "examples" / PRETRAIN))
    assert result.code == 0, result.err
    header = result.out.split("Deployments", 1)[0]
    n_out = sum(1 for s in shipped("servers") if s["card"] in RESTRICTED)
    assert (
        f"market cn: {n_out} catalogue servers not bought (export status for China: "
        f"{n_out} restricted; see Compliance)" in header
    )
