"""The cluster network in the model (issue 24, part 1): fabric sizes derived by hand.

A site's fabric of one class is one switch up to its radix, else a two-tier fat tree:
leaves = ceil(ports / down), spines = ceil(up x leaves / radix), links = ports + up x
leaves (server-to-leaf plus leaf-to-spine), with down = up = radix / 2 when non-blocking.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.factories import instances as factory
from tests.factories.files import write_reqs
from tests.support.shipped import CARDS, COLO, ROOT, SERVERS, example

from gpusolve.candidates.network import down_ports, fabric_class, rack_network, servers_per_rack
from gpusolve.load import load_catalog
from gpusolve.optimize.fabric import needed
from gpusolve.optimize.ir import (
    FabricClass,
    FabricCount,
    Instance,
    SolveConfig,
    SwitchOption,
)
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check

NETWORK = ROOT / "catalog" / "network.yaml"
CONFIG = SolveConfig(time_limit_s=600, work_limit=20, workers=1, seed=1)

# A 64-port switch for 300 (1 U, 1,000 W) and links at 9 each.
IB = FabricClass("ib-400g", "sw64", "link400", 64, 32, 300, 1000, 1, 9)
NODE = factory.sku("node", capex=1000, power_w=1_000, rack_units=1, fabric="ib-400g", nics=8)


def _instance(
    servers: int, fabric: FabricClass = IB, rack_units: int = 100, **site: Any
) -> Instance:
    hall = factory.site("hall", 100_000, 50, energy={"node": 1}, units=rack_units, **site)
    job = factory.owned("job", "job", servers, sku="node", sites=("hall",), spans=servers > 1)
    return factory.instance(
        ("job",), (job,), sites=(hall,), skus=(NODE,), horizon_months=1, fabrics={fabric.id: fabric}
    )


@pytest.mark.parametrize(
    ("servers", "single", "leaves", "spines"),
    [
        (1, 0, 0, 0),  # one server: no job across servers, no compute fabric
        (3, 1, 0, 0),  # 24 ports fit one 64-port switch
        (8, 1, 0, 0),  # 64 ports: still one switch
        (9, 0, 3, 2),  # 72 ports: ceil(72/32) = 3 leaves, ceil(32 x 3 / 64) = 2 spines
        (64, 0, 16, 8),  # 512 ports: 16 leaves, 8 spines
    ],
)
def test_the_model_buys_the_hand_derived_fabric(
    servers: int, single: int, leaves: int, spines: int
) -> None:
    instance = _instance(servers)
    solution = solve(instance, CONFIG)
    assert solution.status == "optimal"
    assert check(instance, solution) == []
    ports = 8 * servers if servers > 1 else 0
    expected = FabricCount(ports, single, leaves, spines)
    assert solution.fabric.get(("hall", "ib-400g"), FabricCount(0, 0, 0, 0)) == expected
    assert needed(IB, ports) == (single, leaves, spines)
    links = ports + 32 * leaves
    switches = single + leaves + spines
    assert solution.costs is not None
    assert solution.costs.network == 300 * switches + 9 * links
    assert solution.costs.capex == 1000 * servers + solution.costs.network


def test_oversubscription_buys_fewer_spines_and_links() -> None:
    # 2:1 on a 64-port leaf: floor(64 x 2 / 3) = 42 down, 22 up. 72 ports: ceil(72/42) =
    # 2 leaves, ceil(22 x 2 / 64) = 1 spine, 72 + 44 = 116 links (non-blocking: 3, 2, 168).
    assert down_ports(64, 2.0) == 42
    half = dataclasses.replace(IB, down_ports=down_ports(64, 2.0))
    solution = solve(_instance(9, half), CONFIG)
    assert solution.fabric[("hall", "ib-400g")] == FabricCount(72, 0, 2, 1)
    assert solution.costs is not None and solution.costs.network == 300 * 3 + 9 * 116


def test_switches_that_do_not_fit_the_reserve_rent_more_racks() -> None:
    # Nine 1 U servers fill a rack of 10 usable U, which keeps 2 U more, 1 U of them for
    # its own ToR: 10 + 2 - 1 - 9 = 2 U are left for the fabric's 5 switches (3 leaves +
    # 2 spines, 1 U each); the other three take a rack of their own (rented like any
    # other: the empty fill).
    tight = dict(rack_units=10, reserved_units=2, reserved_w=10_000, rack_network_units=1)
    instance = _instance(9, **tight)  # type: ignore[arg-type]
    solution = solve(instance, CONFIG)
    assert check(instance, solution) == []
    assert solution.racks == {("hall", (("node", 9),)): 1, ("hall", ()): 1}
    assert solution.costs is not None and solution.costs.rack_rent == 2 * 5
    roomy = _instance(9, rack_units=14, reserved_units=2, reserved_w=10_000, rack_network_units=1)
    assert sum(solve(roomy, CONFIG).racks.values()) == 1


def _owned_70b(**changes: Any) -> dict[str, Any]:
    """The 70B example bought, not rented: no cloud catalogue, market global."""
    data = example("pretrain-70b-infiniband.yaml")
    data["market"] = "global"
    data.update(changes)
    return data


def _plan(gpusolve: Any, reqs: Path) -> dict[str, Any]:
    args = ["plan", "-q", str(reqs), "--no-default-catalog", "--format", "json"]
    for f in (CARDS, SERVERS, COLO, NETWORK):
        args += ["--catalog", str(f)]
    result = gpusolve(*args)
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_the_70b_example_bought_lists_its_network_by_hand(gpusolve: Any, tmp_path: Path) -> None:
    plan = _plan(gpusolve, write_reqs(tmp_path, _owned_70b()))
    (dep,) = plan["deployments"]
    assert dep["mode"] == "owned" and dep["servers"] > 1
    catalog = load_catalog([CARDS, SERVERS, COLO, NETWORK]).catalog
    server = catalog.servers[dep["server"]]
    (site,) = plan["sites"]
    # By hand, from the catalogue: its NICs pick the switch of their kind and rate.
    kind = {"infiniband": "infiniband", "roce": "ethernet"}[server.fabric.kind]
    (switch,) = [
        s
        for s in catalog.switches.values()
        if s.role == "fabric" and s.fabric == kind and s.ports_at(server.fabric.nic_gbps)
    ]
    radix = switch.ports_at(server.fabric.nic_gbps)
    ports = dep["servers"] * server.fabric.nics
    if ports <= radix:
        leaves, spines, switches = 0, 0, 1
    else:
        leaves = math.ceil(ports / (radix // 2))
        spines = math.ceil(radix // 2 * leaves / radix)
        switches = leaves + spines
    links = ports + radix // 2 * leaves
    items = [i for i in plan["cost"]["breakdown"]["items"] if i["kind"] == "network"]
    by_subject = {i["subject"]: i for i in items}
    assert by_subject[switch.id]["quantity"] == switches
    assert by_subject[switch.id]["unit_price"] == switch.price
    link = next(i for i in items if i["unit"] == "link" and "server-to-switch" in i["detail"])
    assert link["quantity"] == links
    nic = next(i for i in items if i["unit"] == "NIC")
    assert nic["quantity"] == ports
    tor = next(i for i in items if "top-of-rack switch per rack" in i["detail"])
    assert tor["quantity"] == site["racks"]
    for item in items:
        assert item["amount"] == item["quantity"] * item["unit_price"]
        assert item["source"] and item["unit"]
        assert item["illustrative"] is True  # every shipped network price is illustrative
    cost = plan["cost"]
    network = sum(i["amount"] for i in items)
    assert network > 0 and cost["breakdown"]["network"] == network
    assert cost["capex"] == cost["breakdown"]["servers_capex"] + network
    parts = ("servers_capex", "network", "rack_rent", "energy", "bandwidth", "cloud_rental")
    parts += ("storage",)
    assert cost["tco"] == sum(cost["breakdown"][k] for k in parts)


def test_hardware_reads_the_users_oversubscription() -> None:
    """Multi-node layouts are sized on `Hardware.with_oversubscription(ratio)` per group of
    sites: the fabric the user asks for is never better than the site's own."""
    from gpusolve.candidates.sizing import fabric_groups

    catalog = load_catalog().catalog
    server = catalog.servers["hgx-h100-8gpu"]
    rdma = {"infiniband", "roce"}
    for wanted in (1.0, 2.0):
        for ratio, offers in fabric_groups(catalog, server, wanted):
            for offer in offers:
                if offer.fabric in rdma:
                    assert ratio == max(wanted, offer.fabric_oversubscription)
                else:
                    assert ratio == 1.0  # single-server layouts only: no fabric crossed


# Small sites (issue 35, deliverable 5): the same class with a 32-port switch for 100 (1 U,
# 300 W) beside the 64-port one, and NIC-to-NIC cables at 5 each for two servers.
SMALL_SITE = dataclasses.replace(
    IB,
    small=(SwitchOption("sw32", 32, 100, 300, 1),),
    direct_link="cable",
    direct_link_price=5,
)


def _jobs(*jobs: tuple[str, int, str], fabric: FabricClass = SMALL_SITE) -> Instance:
    """(workload, servers, slot) per job, each on `node`s spanning servers at `hall`."""
    hall = factory.site("hall", 100_000, 50, energy={"node": 1}, units=100)
    options = tuple(
        factory.owned(w, w, n, slot, sku="node", sites=("hall",), spans=True)  # type: ignore[arg-type]
        for w, n, slot in jobs
    )
    names = tuple(w for w, _, _ in jobs)
    return factory.instance(
        names, options, sites=(hall,), skus=(NODE,), horizon_months=1, fabrics={fabric.id: fabric}
    )


@pytest.mark.parametrize(
    ("jobs", "count", "network"),
    [
        # Two servers: 8 cables at 5 = 40, against the 32-port switch and 16 links: 100 +
        # 16 x 9 = 244.
        ((("job", 2, "always"),), FabricCount(0, 0, 0, 0, None, 8), 40),
        # Three servers (24 ports): no direct links; the 32-port switch, 100 + 24 x 9 = 316,
        # beats the 64-port one, 300 + 216 = 516.
        ((("job", 3, "always"),), FabricCount(24, 0, 0, 0, "sw32"), 316),
        # Four (32 ports) still fit it: 100 + 288 = 388. Five (40) do not: 300 + 360 = 660.
        ((("job", 4, "always"),), FabricCount(32, 0, 0, 0, "sw32"), 388),
        ((("job", 5, "always"),), FabricCount(40, 1, 0, 0), 660),
        # Day and night jobs of two servers each share the pair of servers: 8 cables.
        ((("day", 2, "day"), ("night", 2, "night")), FabricCount(0, 0, 0, 0, None, 8), 40),
        # Two pairs at once are four servers: a switch (32 ports, 388), not direct links.
        ((("a", 2, "always"), ("b", 2, "always")), FabricCount(32, 0, 0, 0, "sw32"), 388),
    ],
)
def test_a_small_site_cables_directly_or_buys_the_smallest_switch(
    jobs: tuple[tuple[str, int, str], ...], count: FabricCount, network: int
) -> None:
    instance = _jobs(*jobs)
    solution = solve(instance, CONFIG)
    assert solution.status == "optimal"
    assert check(instance, solution) == []
    assert solution.fabric[("hall", "ib-400g")] == count
    assert solution.costs is not None and solution.costs.network == network


def test_the_catalogue_gives_the_atlas_fabric_its_small_options() -> None:
    # 8 x 200G RoCE per Atlas 800T A2: the 256 x 200G SN5600 builds large fabrics (cheapest
    # per port: 450,000 / 256); the 32-port SN3700 and the 128 x 200G SN5400 may serve a
    # small one alone; two servers may use the 200G NIC-to-NIC cable.
    catalog = load_catalog().catalog
    fabric = fabric_class(catalog, catalog.servers["atlas-800t-a2"], 1.0, 1.0)
    assert fabric is not None
    assert (fabric.switch, fabric.radix) == ("sn5600-800g-64p", 256)
    assert [(s.id, s.radix) for s in fabric.small] == [
        ("sn3700-200g-32p", 32),
        ("sn5400-400g-64p", 128),
    ]
    assert fabric.direct_link == "qsfp56-200g-aoc-nic-to-nic"
    # Four of them (32 ports): the SN3700 and 32 links, 108,000 + 32 x 4,000 = 236,000,
    # against 300,000 + 128,000 (SN5400) and 450,000 + 128,000 (SN5600).
    atlas = factory.sku("atlas", capex=1000, power_w=1_000, rack_units=1, fabric=fabric.id, nics=8)
    hall = factory.site("hall", 100_000, 50, energy={"atlas": 1}, units=100)
    job = factory.owned("job", "job", 4, sku="atlas", sites=("hall",), spans=True)
    instance = factory.instance(
        ("job",),
        (job,),
        sites=(hall,),
        skus=(atlas,),
        horizon_months=1,
        fabrics={fabric.id: fabric},
    )
    solution = solve(instance, CONFIG)
    assert solution.fabric[("hall", fabric.id)] == FabricCount(32, 0, 0, 0, "sn3700-200g-32p")
    assert solution.costs is not None and solution.costs.network == 236_000


def test_the_day_night_example_buys_no_64_port_switch(gpusolve: Any, tmp_path: Path) -> None:
    # With no H20, Ascend 910C or later China-market card to buy (the catalogue before its
    # China-market servers, when this example bought a 64-port 800G switch for two
    # servers), two Atlas 800T A2 share the LoRA job at night: 8 NIC-to-NIC cables (8 NICs
    # each, NIC i to NIC i) at 3,000, no fabric switch; one 18-port ToR and one 24-port
    # management switch for the one rack.
    patch = tmp_path / "no-h20-no-910c.yaml"
    cards = ("h20-96gb", "ascend-910c", "rtx-5090d", "rtx-5090d-v2", "hygon-k100-ai",
             "kunlunxin-p800")  # fmt: skip
    patch.write_text(
        "currency: CNY\npatch:\n"
        + "".join(
            f"  - id: {c}\n    export_cn: {{status: licence-required, source: test}}\n"
            for c in cards
        )
    )
    result = gpusolve("plan", "-q", str(ROOT / "examples" / "chat-day-lora-night.yaml"),
                      "--catalog", str(patch), "--format", "json")  # fmt: skip
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    catalog = load_catalog().catalog
    items = [i for i in plan["cost"]["breakdown"]["items"] if i["kind"] == "network"]
    switches = [catalog.switches[i["subject"]] for i in items if i["unit"] == "switch"]
    assert [(s.id, s.role, s.ports) for s in switches] == [
        ("sn2010-25g-tor", "tor", 18),
        ("ce-s5731-24t4x-management", "management", 24),
    ]
    cables = [i for i in items if i["subject"] == "qsfp56-200g-aoc-nic-to-nic"]
    assert [(i["quantity"], i["unit_price"]) for i in cables] == [(8, 3_000)]
    (storage,) = [i for i in plan["cost"]["breakdown"]["items"] if i["kind"] == "storage"]
    assert storage["subject"] == "nvme-nas-2x3.84tb" and storage["quantity"] == 1


def test_each_rack_gets_the_smallest_tor_with_a_port_per_server() -> None:
    # An Atlas 800T A2 (5.5 kW, 4 U): a rack with 16 kW and 38 U usable holds 2 (16 /
    # 5.5), so the 18-port SN2010 (36,000) serves it; 30 servers need the 48-port SN2410
    # (60,000); beyond every ToR's ports, the one with the most.
    catalog = load_catalog().catalog
    atlas = catalog.servers["atlas-800t-a2"]
    assert servers_per_rack(16_000, 38, "enhanced_air", [atlas]) == 2
    assert servers_per_rack(60_000, 38, "enhanced_air", [atlas]) == 9  # 38 U / 4 U
    liquid = catalog.servers["hgx-h200-8gpu-liquid"]
    assert servers_per_rack(60_000, 38, "air", [liquid]) == 0  # not in an air-cooled rack
    for servers, tor in ((4, "sn2010-25g-tor"), (30, "sn2410-25g-tor"), (100, "sn2410-25g-tor")):
        network = rack_network(catalog, 1.0, servers)
        assert network.tor is not None and network.tor.switch.id == tor
