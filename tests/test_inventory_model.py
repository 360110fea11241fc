"""The inventory in the optimiser (`optimize/inventory.py`), on hand-built instances: owned
servers are used before any is bought, only purchases are capex, the rest are sold or
left idle, contracted racks are paid for their term. The arithmetic is in the comments.

The default factories' world: server h100 at 1,000, 10 kW and 8 U, energy 10 per
server-month; site sz of 20 kW racks at 5 a month (two h100 per rack); 12 months."""

from __future__ import annotations

import dataclasses

from tests.factories.instances import H100, HOT, ONE, instance, owned, rented

from gpusolve.optimize.ir import Contract, Stock
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check


def _solved(inst):  # type: ignore[no-untyped-def]
    solution = solve(inst, ONE)
    assert solution.status == "optimal"
    assert check(inst, solution) == []
    return solution


def test_owned_servers_are_used_and_only_the_rest_is_bought() -> None:
    # The workload needs 3 servers; 2 are owned. Bought: 1 (capex 1,000). In service: 3,
    # in 2 racks: rent 2 x 5 x 12 = 120; energy 3 x 10 x 12 = 360. TCO 1,480.
    inst = instance(("w",), (owned("w|3n", "w", 3),), stock=(Stock("h100", "sz", 2),))
    solution = _solved(inst)
    assert solution.servers == {("h100", "sz"): 3}
    assert solution.bought == {("h100", "sz"): 1}
    assert solution.costs is not None
    assert (solution.costs.capex, solution.costs.rack_rent, solution.costs.energy) == (
        1000,
        120,
        360,
    )
    assert solution.costs.tco == 1480
    assert solution.costs.resale == 0


def test_owned_servers_go_first_even_when_selling_them_pays_more_than_a_new_one() -> None:
    # Resale 1,500 > the price 1,000: selling the 2 owned and buying 3 would gain 1,000,
    # but a plan never buys a model while the same model owned there stays out of service.
    stock = (Stock("h100", "sz", 2, resale=1500),)
    inst = instance(("w",), (owned("w|3n", "w", 3),), stock=stock)
    solution = _solved(inst)
    assert solution.bought == {("h100", "sz"): 1}
    assert solution.costs is not None and solution.costs.resale == 0


def test_stock_that_covers_the_work_buys_nothing() -> None:
    # 4 owned, the workload needs 2: no capex; the 2 unused have no resale price, so they
    # are left idle (powered off): energy 2 x 10 x 12 = 240, one rack 5 x 12 = 60.
    inst = instance(("w",), (owned("w|2n", "w", 2),), stock=(Stock("h100", "sz", 4),))
    solution = _solved(inst)
    assert solution.bought == {}
    assert solution.costs is not None
    assert (solution.costs.capex, solution.costs.tco, solution.costs.resale) == (0, 300, 0)


def test_unused_owned_servers_are_sold_when_renting_is_cheaper() -> None:
    # 2 owned at resale 300 each. Running on them: energy 240 + rent 60 = 300, and the 600
    # resale forgone: 900 net. Renting: 400, and both sold: 400 - 600 = -200 net. Rent.
    stock = (Stock("h100", "sz", 2, resale=300),)
    inst = instance(
        ("w",), (owned("w|2n", "w", 2),), cloud=(rented("w|cloud", "w", 1, 400),), stock=stock
    )
    solution = _solved(inst)
    assert [c.option for c in solution.choices] == ["w|cloud"]
    assert solution.costs is not None
    assert (solution.costs.tco, solution.costs.resale) == (400, 600)
    assert solution.objective_value == -200


def test_a_model_the_market_forbids_is_used_from_stock_and_the_plan_tops_up_elsewhere() -> None:
    # h100 owned (2) but not buyable; the work needs 3 servers on h100 or 2 on "hot" (800
    # each, 20 kW: one per rack). h100 cannot reach 3, so the plan buys 2 hot: capex
    # 1,600, rent 2 x 5 x 12 = 120, energy 2 x 10 x 12 = 240; the h100 stay idle.
    skus = (dataclasses.replace(H100, buyable=False), HOT)
    opts = (owned("w|h100|3n", "w", 3), owned("w|hot|2n", "w", 2, sku="hot"))
    inst = instance(("w",), opts, skus=skus, stock=(Stock("h100", "sz", 2),))
    solution = _solved(inst)
    assert solution.bought == {("hot", "sz"): 2}
    assert solution.costs is not None and solution.costs.tco == 1600 + 120 + 240


def test_two_workloads_use_the_stock_first_and_the_plan_tops_up() -> None:
    # a needs 2 h100 always, b needs 3 h100 always: 5 in service, 2 owned, 3 bought
    # (capex 3,000); 3 racks (rent 180), energy 5 x 120 = 600.
    opts = (owned("a|2n", "a", 2), owned("b|3n", "b", 3))
    inst = instance(("a", "b"), opts, stock=(Stock("h100", "sz", 2),))
    solution = _solved(inst)
    assert solution.bought == {("h100", "sz"): 3}
    assert solution.costs is not None and solution.costs.tco == 3000 + 180 + 600


def test_contracted_racks_cost_only_the_months_past_their_term() -> None:
    # 3 servers need 2 racks; 1 is contracted and paid for 6 of the 12 months: it costs
    # 6 x 5 = 30 (renewed), the other 12 x 5 = 60: rent 90 instead of 120.
    inst = instance(
        ("w",),
        (owned("w|3n", "w", 3),),
        stock=(Stock("h100", "sz", 3),),
        contracts={"sz": Contract("sz", 1, 6)},
    )
    solution = _solved(inst)
    assert solution.costs is not None and solution.costs.rack_rent == 90


def test_racks_contracted_past_the_horizon_cost_nothing_and_idle_ones_are_sunk() -> None:
    # 4 racks contracted for the whole horizon, the plan needs 1: rent 0, and the three
    # left empty cost nothing more (already paid).
    inst = instance(
        ("w",),
        (owned("w|2n", "w", 2),),
        stock=(Stock("h100", "sz", 2),),
        contracts={"sz": Contract("sz", 4, 12)},
    )
    solution = _solved(inst)
    assert solution.costs is not None
    assert (solution.costs.rack_rent, solution.costs.tco) == (0, 240)
