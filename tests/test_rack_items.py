"""Rack-level items (issue 35, deliverable 5): every rack of servers buys, beside its
top-of-rack switch, an out-of-band management switch for the servers' BMC ports, and its
PDUs (one per feed, A and B) where the colo offer's rent does not include them.

Expected figures are derived here from the catalogue entries by the stated rule (the
cheapest switch of its role with a port per server the rack holds; its uplinks cabled with
the cheapest link at least `uplink_gbps` fast; as many PDUs per feed as carry the rack's
contracted kW), never copied from a plan's output.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import yaml
from tests.factories import instances as factory
from tests.factories.requirements import requirements, workload
from tests.support.shipped import ROOT

from gpusolve.candidates.network import PDU_FEEDS, rack_network, servers_per_rack
from gpusolve.candidates.pricing import price_site, vat_factors
from gpusolve.explain.network_lines import network_items
from gpusolve.load import load_catalog
from gpusolve.models.catalog import Catalog, ColoOffer, NetworkLink, NetworkSwitch
from gpusolve.models.money import to_money
from gpusolve.optimize.ir import Site
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check

EXAMPLE = ROOT / "examples" / "chat-day-lora-night.yaml"
OFFER = "yancheng-coastal-12kw"  # the three-rack cases' offer
# The example's site at margin 0: three 4.0 kW Hygon K100-AI boxes carry both shifts, 12 kW,
# one rack of 20 kW (16 kW usable); a 12 kW rack (9.6 kW usable) would hold only two.
EXAMPLE_OFFER = "suqian-green-20kw-roce"


def _cheapest(catalog: Catalog, role: str, servers: int) -> NetworkSwitch:
    """By hand: the cheapest switch of `role` with a port for each of `servers`."""
    fits = [s for s in catalog.switches.values() if s.role == role and s.ports >= servers]
    return min(fits, key=lambda s: (s.price, s.id))


def _uplink(catalog: Catalog, switch: NetworkSwitch) -> NetworkLink:
    """By hand: the cheapest plain cable or optic at least as fast as the switch's uplinks."""
    fits = [
        x
        for x in catalog.links.values()
        if not x.nic_to_nic and x.gbps >= (switch.uplink_gbps or 0.0)
    ]
    return min(fits, key=lambda x: (x.price, x.id))


def _per_rack(catalog: Catalog, switch: NetworkSwitch, goods: float = 1.0) -> int:
    """One switch and its cabled uplinks, as bought goods."""
    link = _uplink(catalog, switch)
    return to_money(switch.price * goods) + switch.uplinks * to_money(link.price * goods)


def _plan(gpusolve: Any, *args: str) -> dict[str, Any]:
    # At margin 0, so the rack this test counts does not move with the default margin.
    bare = Path(tempfile.mkdtemp()) / EXAMPLE.name
    bare.write_text(EXAMPLE.read_text(encoding="utf-8") + "margin: 0\n", encoding="utf-8")
    result = gpusolve("plan", "-q", str(bare), "--format", "json", *args)
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def _network_lines(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in plan["cost"]["breakdown"]["items"] if i["kind"] == "network"]


def _catalogue_without_management(tmp_path: Path) -> Path:
    """The shipped catalogue in a folder of its own, with no management switch."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    for path in sorted((ROOT / "catalog").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if "switches" in data:
            data["switches"] = [s for s in data["switches"] if s["role"] != "management"]
        (folder / path.name).write_text(yaml.safe_dump(data, allow_unicode=True))
    return folder


def test_one_rack_buys_one_management_switch_and_the_tco_pays_for_it(
    gpusolve: Any, tmp_path: Path
) -> None:
    catalog = load_catalog().catalog
    plan = _plan(gpusolve)
    (site,) = plan["sites"]
    assert (site["offer"], site["racks"]) == (EXAMPLE_OFFER, 1)
    # The management switch needs a port for each server the rack can hold of the models
    # the plan may place there, within what the reserve leaves. By hand, for the model it
    # places: 20 kW less the 4 kW reserve over 4.0 kW a K100-AI box, and 42 U less 4 over
    # 4 U: min(4, 9) = 4 boxes, which the cheapest management switch's 24 ports cover. Sized
    # for every catalogue server (33 of the 1 U, 0.6 kW 2 x L4 box in the whole rack) it
    # would take the 48-port one: the plan sizes for its own candidates, not the catalogue.
    offer = catalog.colo_offers[EXAMPLE_OFFER]
    usable_w = round((offer.rack_kw - site["reserved_kw"]) * 1000)
    usable_units = offer.rack_units - site["reserved_units"]
    placed = [catalog.servers[s] for s in site["servers"]]
    most = servers_per_rack(usable_w, usable_units, offer.cooling, placed)
    assert most == 4
    management = _cheapest(catalog, "management", most)
    lines = _network_lines(plan)
    switches = [i for i in lines if i["unit"] == "switch"]
    mine = [i for i in switches if catalog.switches[i["subject"]].role == "management"]
    assert [(i["subject"], i["quantity"], i["unit_price"]) for i in mine] == [
        (management.id, 1, management.price)
    ]
    link = _uplink(catalog, management)
    cables = [i for i in lines if i["subject"] == link.id and "management" in i["detail"]]
    assert [(i["quantity"], i["unit_price"]) for i in cables] == [(management.uplinks, link.price)]
    # The lines add up to the network figure, and that to the TCO's parts.
    cost = plan["cost"]
    assert cost["breakdown"]["network"] == sum(i["amount"] for i in lines)
    for item in lines:
        assert item["amount"] == item["quantity"] * item["unit_price"]
    # The same plan from a catalogue with no management switch costs exactly its price less.
    bare = _plan(
        gpusolve, "--no-default-catalog", "--catalog", str(_catalogue_without_management(tmp_path))
    )
    keep = ("server", "site", "servers", "mode")
    assert [{k: d.get(k) for k in keep} for d in bare["deployments"]] == [
        {k: d.get(k) for k in keep} for d in plan["deployments"]
    ]
    assert cost["tco"] - bare["cost"]["tco"] == _per_rack(catalog, management)
    bought = [i["subject"] for i in _network_lines(bare) if i["unit"] == "switch"]
    roles = {catalog.switches[i].role for i in bought}
    assert "management" not in roles  # a catalogue without one buys none


def _three_racks(offer: ColoOffer) -> tuple[Site, Any]:
    """`offer` priced as a site whose racks hold one 7 kW server each (12 kW racks), and a
    job of three such servers: three racks."""
    catalog = load_catalog().catalog
    reqs = requirements(workload())
    site = price_site(offer, catalog, reqs, rack_servers=1)
    site = dataclasses.replace(site, energy_month={"node": 1})
    node = factory.sku("node", capex=1000, power_w=7_000, rack_units=2, cooling=offer.cooling)
    job = factory.owned("job", "job", 3, sku="node", sites=(site.id,))
    instance = factory.instance(("job",), (job,), sites=(site,), skus=(node,), horizon_months=1)
    return site, instance


def test_three_racks_buy_three_management_switches() -> None:
    loaded = load_catalog().catalog
    offer = loaded.colo_offers[OFFER]
    assert offer.pdus_included  # the shipped offers' racks come with their PDUs
    site, instance = _three_racks(offer)
    goods, _ = vat_factors(requirements(workload()))
    tor = _cheapest(loaded, "tor", 1)
    management = _cheapest(loaded, "management", 1)
    per_rack = _per_rack(loaded, tor, goods) + _per_rack(loaded, management, goods)
    assert site.rack_network_capex == per_rack
    assert site.rack_network_units == tor.rack_units + management.rack_units
    solution = solve(instance, factory.ONE)
    assert solution.status == "optimal"
    assert check(instance, solution) == []
    assert sum(solution.racks.values()) == 3
    assert solution.costs is not None and solution.costs.network == 3 * per_rack
    lines = network_items(solution, instance, loaded, goods)
    assert [(i.subject, i.quantity) for i in lines if i.unit == "switch"] == [
        (tor.id, 3),
        (management.id, 3),
    ]
    assert not [i for i in lines if i.unit == "PDU"]  # the rent includes them
    assert sum(i.amount for i in lines) == solution.costs.network


def test_an_offer_without_pdus_buys_a_pair_per_rack() -> None:
    loaded = load_catalog().catalog
    offer = loaded.colo_offers[OFFER].model_copy(update={"pdus_included": False})
    with_pdus, instance = _three_racks(offer)
    included, _ = _three_racks(loaded.colo_offers[OFFER])
    # By hand: each feed carries the contracted kW alone; the cheapest PDU model for it.
    feed_kw = offer.rack_kw

    def per_feed(capacity_kw: float) -> int:
        return math.ceil(feed_kw / capacity_kw)

    pdu = min(loaded.pdus.values(), key=lambda p: (per_feed(p.capacity_kw) * p.price, p.id))
    count = PDU_FEEDS * per_feed(pdu.capacity_kw)
    assert count == 2  # a 12 kW rack: one 22 kW PDU per feed
    assert with_pdus.rack_network_capex - included.rack_network_capex == count * pdu.price
    solution = solve(instance, factory.ONE)
    assert solution.costs is not None and sum(solution.racks.values()) == 3
    lines = network_items(solution, instance, loaded, 1.0)
    pdus = [(i.subject, i.quantity, i.unit_price) for i in lines if i.unit == "PDU"]
    assert pdus == [(pdu.id, 3 * count, pdu.price)]
    assert sum(i.amount for i in lines) == solution.costs.network


def test_a_catalogue_without_rack_parts_buys_none() -> None:
    # A user catalogue of servers alone: no ToR, no management switch, no PDU, nothing
    # bought per rack even where the rent lacks PDUs.
    catalog = load_catalog().catalog.model_copy(update={"switches": {}, "links": {}, "pdus": {}})
    own = rack_network(catalog, 1.0, 4, pdu_feed_w=12_000)
    assert (own.tor, own.management, own.pdus) == (None, None, None)
    assert (own.capex, own.power_w, own.rack_units) == (0, 0, 0)
