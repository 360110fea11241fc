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

from gpusolve.candidates.network import down_ports
from gpusolve.load import load_catalog
from gpusolve.optimize.fabric import needed
from gpusolve.optimize.ir import (
    FabricClass,
    FabricCount,
    Instance,
    SolveConfig,
)
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check

NETWORK = ROOT / "catalog" / "network.yaml"
CONFIG = SolveConfig(time_limit_s=20, workers=1, seed=1)

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
    parts += ("residual_value", "storage")  # a credit: the servers' value at the horizon
    assert cost["tco"] == sum(cost["breakdown"][k] for k in parts)


def test_hardware_reads_the_users_oversubscription() -> None:
    """Multi-node layouts are sized on `Hardware.with_oversubscription(ratio)` per group of
    sites: the fabric the user asks for is never better than the site's own."""
    from gpusolve.candidates.generate import _fabric_groups

    catalog = load_catalog().catalog
    server = catalog.servers["hgx-h100-8gpu"]
    rdma = {"infiniband", "roce"}
    for wanted in (1.0, 2.0):
        for ratio, offers in _fabric_groups(catalog, server, wanted):
            for offer in offers:
                if offer.fabric in rdma:
                    assert ratio == max(wanted, offer.fabric_oversubscription)
                else:
                    assert ratio == 1.0  # single-server layouts only: no fabric crossed
