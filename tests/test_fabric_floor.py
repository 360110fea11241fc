"""The fabric's floor rows (`optimize/fabric_floor.py`): least costs derived by hand, an LP
relaxation that pays for a whole fabric, and plans the rows must not cut off.

The rows must not cut off a plan (the solves below) and must charge what the rate says
(the rows alone). The class below: a 64-port switch for 300 with 32 ports down and 32 up
in a tree, links at 9 each. One switch serves up to 64 ports (300 + 9 x ports); beyond,
leaves = ceil(ports / 32) (at least 2), spines = ceil(32 x leaves / 64), links = ports +
32 x leaves.
"""

from __future__ import annotations

import dataclasses

from ortools.sat.python import cp_model
from tests.factories import instances as factory

from gpusolve.optimize.fabric_floor import add_floors, least_cost, port_rate
from gpusolve.optimize.ir import FabricClass, Instance, OwnedOption, SolveConfig, SwitchOption
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check

IB = FabricClass("ib-400g", "sw64", "link400", 64, 32, 300, 1000, 1, 9)
NODE = factory.sku("node", capex=1000, power_w=1_000, rack_units=1, fabric="ib-400g", nics=8)
CONFIG = SolveConfig(time_limit_s=600, work_limit=20, workers=1, seed=1)


def test_least_cost_by_hand() -> None:
    assert least_cost(IB, 24, 3, 8) == 300 + 9 * 24  # one switch
    assert least_cost(IB, 64, 8, 8) == 300 + 9 * 64
    # 72 ports: 3 leaves, 2 spines, 72 + 96 links.
    assert least_cost(IB, 72, 9, 8) == 5 * 300 + 9 * (72 + 96)
    small = dataclasses.replace(IB, small=(SwitchOption("sw32", 32, 100, 200, 1),))
    assert least_cost(small, 24, 3, 8) == 100 + 9 * 24
    assert least_cost(small, 40, 5, 8) == 300 + 9 * 40  # more ports than the small one has
    cable = dataclasses.replace(IB, direct_link="dac", direct_link_price=5)
    assert least_cost(cable, 16, 2, 8) == 5 * 8  # two servers cabled NIC to NIC
    assert least_cost(cable, 24, 3, 8) == 300 + 9 * 24  # three need a switch


def test_port_rate_is_the_least_per_port_cost() -> None:
    # One switch is cheapest per port when full: (300 + 9 x 64) / 64 = 13.69 -> 13; a tree
    # costs more per port (72 ports: 3012 / 72 = 41.8; 96 ports: 3228 / 96 = 33.6).
    assert port_rate(IB, 100) == 13
    # Up to 10 ports: (300 + 90) / 10 = 39.
    assert port_rate(IB, 10) == 39
    assert port_rate(IB, 0) == 0


def _jobs(*opts: OwnedOption, sites: tuple[str, ...] = ("hall",)) -> Instance:
    halls = tuple(factory.site(s, 100_000, 50, energy={"node": 1}, units=100) for s in sites)
    workloads = tuple(sorted({o.workload for o in opts}))
    return factory.instance(
        workloads, opts, sites=halls, skus=(NODE,), horizon_months=1, fabrics={IB.id: IB}
    )


@dataclasses.dataclass(frozen=True)
class _Job:
    slot: str
    ports: int
    var: cp_model.IntVar
    servers: int


def _least_row(fabric: FabricClass, jobs: list[tuple[str, int, int]], most_ports: int) -> int:
    """The least `cost` the rows allow with every job's choice taken: the rows alone."""
    model = cp_model.CpModel()
    cost = model.new_int_var(0, 10**9, "cost")
    needs: list[_Job] = []
    for slot, ports, servers in jobs:
        var = model.new_bool_var(f"x{len(needs)}")
        model.add(var == 1)
        needs.append(_Job(slot, ports, var, servers))
    add_floors(model, fabric, cost, needs, most_ports)
    model.minimize(cost)
    solver = cp_model.CpSolver()
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(solver.value(cost))


def test_the_rows_charge_the_rate_per_switched_port_per_slot() -> None:
    # 72 ports on 9 servers, most ports 72: the rate is 13 (one full switch), 13 x 72 = 936.
    assert _least_row(IB, [("always", 72, 9)], 72) == 13 * 72
    # A day job and a night job share the fabric: the busiest slot's ports, not the sum.
    assert _least_row(IB, [("day", 64, 8), ("night", 40, 5)], 64) == 13 * 64
    # Two servers a cable can join ask nothing of a class with a cable; three do.
    cable = dataclasses.replace(IB, direct_link="dac", direct_link_price=5)
    assert _least_row(cable, [("always", 16, 2)], 16) == 0
    assert _least_row(cable, [("always", 24, 3)], 24) == (300 + 9 * 24) // 24 * 24


def test_day_and_night_jobs_share_one_switch() -> None:
    # Eight servers by day and eight by night on the same servers: 64 ports in the busiest
    # slot, one switch, 300 + 9 x 64 = 876. A rate row summed over both slots would ask for
    # 13 x 128 = 1,664 and cut this plan off.
    day = factory.owned("day", "day", 8, "day", sku="node", sites=("hall",), spans=True)
    night = factory.owned("night", "night", 8, "night", sku="node", sites=("hall",), spans=True)
    instance = _jobs(day, night)
    solution = solve(instance, CONFIG)
    assert solution.status == "optimal"
    assert check(instance, solution) == []
    assert solution.costs is not None and solution.costs.network == 300 + 9 * 64


def test_two_small_jobs_share_one_switch() -> None:
    # Three servers each, 24 + 24 ports on one 64-port switch: 300 + 9 x 48 = 732, less
    # than the two floors summed (2 x 516): the floors are per workload, never added up.
    a = factory.owned("a", "a", 3, sku="node", sites=("hall",), spans=True)
    b = factory.owned("b", "b", 3, sku="node", sites=("hall",), spans=True)
    instance = _jobs(a, b)
    solution = solve(instance, CONFIG)
    assert solution.status == "optimal"
    assert check(instance, solution) == []
    assert solution.costs is not None and solution.costs.network == 300 + 9 * 48
