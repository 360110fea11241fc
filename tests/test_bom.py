"""The bill of materials (issue 24, deliverable 7): card -> server -> rack -> site, then
network, storage, spares and cloud; each priced line is quantity x unit price with its
source and illustrative flag, the lines add up to the plan's TCO, and `--bom --format
csv` writes one row per item for a spreadsheet."""

from __future__ import annotations

import csv
import json
import re
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_cli
from tests.support.example_plans import plan_json
from tests.support.shipped import EXAMPLES, ROOT

from gpusolve.explain.bom import bom_line, section_of
from gpusolve.load import load_catalog
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import CostItem, Plan
from gpusolve.render.bom import CSV_COLUMNS


def _sized_as_estimated(path: Path) -> Path:
    """The example at margin 0, so the figures below do not move with the default margin."""
    bare = Path(tempfile.mkdtemp()) / path.name
    bare.write_text(path.read_text(encoding="utf-8") + "margin: 0\n", encoding="utf-8")
    return bare


CHAT = _sized_as_estimated(ROOT / "examples" / "chat-day-lora-night.yaml")
PLANS = EXAMPLES


@cache
def _plan(path: Path) -> Plan:
    code, text = plan_json(path)
    assert code == 0, text
    return Plan.model_validate(json.loads(text))


@cache
def _catalog() -> Catalog:
    return load_catalog(None).catalog


def _pricing_of(line_section: str, item: str, site: str | None) -> Any:
    """The catalogue price note a BOM line's price must come from."""
    cat = _catalog()
    if line_section == "server":
        return cat.servers[item].pricing
    if line_section == "cloud":
        return cat.cloud_offers[item].pricing
    if line_section == "storage":
        return cat.storage[item].pricing
    if line_section == "network":  # a switch, link or NIC; NICs inside a server: the server's
        parts = {**cat.switches, **cat.links, **cat.nics}
        return parts[item].pricing if item in parts else cat.servers[item.split()[0]].pricing
    assert site is not None
    return cat.colo_offers[site].pricing  # rack rent, energy and bandwidth: the colo offer


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_priced_lines_add_up_to_the_tco(path: Path) -> None:
    plan = _plan(path)
    assert plan.cost is not None and plan.bom
    priced = [ln for ln in plan.bom if ln.unit_price is not None]
    for ln in priced:
        # Money is whole units: a cloud rental is instance-hours x hourly price rounded once.
        assert abs(ln.quantity * ln.unit_price - ln.amount) <= 0.5, ln
        assert ln.source, ln
    assert sum(ln.amount for ln in priced) == plan.cost.tco
    # Capex: the servers, their network and storage (issue 24).
    sections = ("server", "network", "storage")
    bought = [ln for ln in plan.bom if ln.section in sections and ln.amount > 0]
    assert sum(ln.amount for ln in bought) == plan.cost.capex
    # A resale credit is never a line of the bill (issue 35): no negative amounts.
    assert all(ln.amount >= 0 for ln in plan.bom)
    unpriced = [ln for ln in plan.bom if ln.unit_price is None]
    assert all(ln.amount == 0 for ln in unpriced)


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_sources_and_illustrative_flags_match_the_catalogue(path: Path) -> None:
    plan = _plan(path)
    for ln in plan.bom:
        if ln.unit_price is None:
            continue
        note = _pricing_of(ln.section, ln.item, ln.site)
        assert ln.illustrative == note.illustrative, ln
        assert note.source in ln.source and note.as_of in ln.source, ln
    # Each line names the file:line of the entry its price comes from: the item's own for
    # what is bought or rented, the colo offer's for a site's rent, energy and bandwidth.
    where = {ref.id: ref.defined_at for ref in plan.sources}
    for ln in plan.bom:
        if ln.unit_price is None or ln.item.endswith("fabric NIC"):
            continue
        own = ln.section in ("server", "cloud", "network", "storage")
        at = where[ln.item if own else ln.site or ""]
        assert ln.source.endswith(at), ln
        assert at.startswith("catalog/" + _FILE_OF.get(ln.section, "")), ln
    bought = {ln.item for ln in plan.bom if ln.section in ("network", "storage") and ln.amount}
    listed = {
        ref.id for ref in plan.sources if ref.kind in ("switches", "links", "nics", "storage")
    }
    assert listed == bought
    illustrative = {i.split(" (")[0] for i in plan.illustrative_prices}
    for ln in plan.bom:
        if ln.section in ("network", "storage") and ln.amount and ln.illustrative:
            assert f"{ln.section} {ln.item}" in illustrative, ln


_FILE_OF = {"network": "network.yaml", "storage": "storage.yaml", "server": "servers.yaml"}


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_cards_come_inside_their_servers(path: Path) -> None:
    plan = _plan(path)
    bought = [ln for ln in plan.bom if ln.section == "server" and ln.amount > 0]
    cards = [ln for ln in plan.bom if ln.section == "card"]
    assert len(cards) == len(bought)
    for server, card in zip(bought, cards, strict=True):
        spec = _catalog().servers[server.item]
        assert card.item == spec.card and card.site == server.site
        assert card.quantity == server.quantity * spec.gpus
        assert card.note == f"inside {server.item}" and card.amount == 0
    # Per site, card -> server -> rack -> site; then the plan-wide sections.
    order = ["card", "server", "rack", "site", "network", "storage", "spare", "cloud"]
    for site in {ln.site for ln in plan.bom if ln.site is not None}:
        ranks = [order.index(ln.section) for ln in plan.bom if ln.site == site]
        assert ranks == sorted(ranks)
    sections = [ln.section for ln in plan.bom]
    if "cloud" in sections:
        assert sections[sections.index("cloud") :] == ["cloud"] * sections.count("cloud")


def test_chat_example_by_hand() -> None:
    """3 x pcie8-hygon-k100ai (24 cards) bought for day and night, 1 rack over 36 months.

    One H20 box no longer carries the night LoRA: on the hf stack it takes 10.8 h of its
    10 h window, so the H20 way is two boxes, 2 x 1,200,000 = 2,400,000 CNY of servers,
    against 3 x 700,000 = 2,100,000 for three K100-AI boxes (catalog/servers.yaml prices),
    which serve the chat by day and run the LoRA on 24 cards by night. The three draw
    3 x 4.0 kW = 12 kW: one rack of 20 kW (16 kW usable), where a 12 kW rack's 9.6 kW
    usable holds two."""
    plan = _plan(CHAT)
    by_section = {ln.section: ln for ln in plan.bom}
    assert by_section["card"].quantity == 24 and by_section["card"].item == "hygon-k100-ai"
    (server,) = [ln for ln in plan.bom if ln.section == "server" and ln.amount > 0]
    assert (server.quantity, server.unit) == (3, "server")
    assert server.unit_price == _catalog().servers["pcie8-hygon-k100ai"].price
    rack = by_section["rack"]
    assert (rack.quantity, rack.unit) == (36, "rack-month")
    assert rack.unit_price == _catalog().colo_offers[rack.item].rack_price_per_month


def test_csv_one_row_per_item(tmp_path: Path) -> None:
    out = tmp_path / "bom.csv"
    code, _ = run_cli("plan", "-q", str(CHAT), "--bom", "--format", "csv", "-o", str(out))
    assert code == 0
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    plan = _plan(CHAT)
    assert len(rows) == len(plan.bom)
    with out.open(encoding="utf-8") as fh:
        assert tuple(next(csv.reader(fh))) == CSV_COLUMNS
    for row, ln in zip(rows, plan.bom, strict=True):
        assert (row["section"], row["item"], row["site"]) == (ln.section, ln.item, ln.site or "")
        assert float(row["quantity"]) == ln.quantity and row["unit"] == ln.unit
        assert row["illustrative"] == ("yes" if ln.illustrative else "no")
        if row["unit_price"]:
            price = float(row["unit_price"])
            assert abs(float(row["quantity"]) * price - float(row["amount"])) <= 0.5
            assert row["source"]
        else:
            assert float(row["amount"]) == 0 and row["note"].startswith("inside ")
    priced = sum(float(r["amount"]) for r in rows if r["unit_price"])
    assert plan.cost is not None and priced == plan.cost.tco


def test_bom_text_and_every_report_show_it() -> None:
    code, text = run_cli("plan", "-q", str(CHAT), "--bom")
    assert code == 0
    assert text.startswith("Bill of materials (CNY")
    tco = _plan(CHAT).cost.tco  # type: ignore[union-attr]
    assert f"total = TCO over the horizon: {tco:,.0f} CNY" in text
    _, report = run_cli("plan", "-q", str(CHAT))
    assert "\nBill of materials (CNY" in report
    # --no-sensitivity: the memo's default ranges are no part of the cost table.
    _, md = run_cli("plan", "-q", str(CHAT), "--format", "markdown", "--no-sensitivity")
    assert "\n### Cost and bill of materials\n" in md  # the BOM merged with the cost lines


def test_csv_needs_bom() -> None:
    code, _ = run_cli("plan", "-q", str(CHAT), "--format", "csv")
    assert code == 2


def test_unknown_kinds_go_to_a_section_and_unpriced_lines_are_one_lot() -> None:
    assert section_of("network_switches") == "network"
    assert section_of("storage") == "storage"
    assert section_of("spare_servers") == "spare"
    assert section_of("colo_setup_fee") == "site"  # unknown: a site's cost
    # A kind another module adds later (not yet in CostKind), without a unit price.
    item = CostItem.model_construct(
        kind="network_switches",
        subject="leaf-400g",
        detail="2 switches",
        amount=123_456.0,
        quantity=None,
        unit="",
        unit_price=None,
        source="vendor list",
        illustrative=True,
        site="site-a",
    )
    ln = bom_line(item)
    assert (ln.section, ln.quantity, ln.unit, ln.unit_price) == ("network", 1, "lot", 123_456.0)
    assert ln.amount == 123_456.0 and ln.site == "site-a" and ln.illustrative


def test_a_quote_patched_in_is_the_source_with_its_file_and_line(tmp_path: Path) -> None:
    quote = tmp_path / "quotes.yaml"
    quote.write_text(
        "currency: CNY\n"
        "patch:\n"
        # A quote below the catalogue's 700,000 for the server the plan buys: it stays the
        # cheapest way, so the plan still buys these three and the quote prices them.
        "  - id: pcie8-hygon-k100ai\n"
        "    price: 650000\n"
        '    pricing: {illustrative: false, as_of: "2026-11", source: "quote from vendor X"}\n',
        encoding="utf-8",
    )
    code, text = run_cli(
        "plan", "-q", str(CHAT), "--catalog", str(quote), "--bom", "--format", "csv"
    )
    assert code == 0
    rows = list(csv.DictReader(text.splitlines()))
    server = next(r for r in rows if r["section"] == "server")
    assert server["source"] == f"quote from vendor X (as of 2026-11); {quote}:3"
    assert (server["unit_price"], server["amount"], server["illustrative"]) == (
        "650000",
        "1950000",  # 3 x 650,000
        "no",
    )
    # Not patched: the rack's price is where the shipped catalogue defines the offer.
    rack = next(r for r in rows if r["section"] == "rack")
    assert re.search(r"; catalog/colo-[\w-]+\.yaml:\d+$", rack["source"])
