"""Moving owned servers to another site at a stated cost per server, in a single plan and
in a schedule, and `plan` and `colo` agreeing on where an owned fleet goes. Hand-built
instances; the arithmetic is in the comments.

The world (tests/factories/instances.py): server h100 (10 kW, 8 U), site sz of 20 kW racks
at 5 a month (two h100 per rack), energy 10 per server-month; horizon 12 months."""

from __future__ import annotations

import dataclasses
import json

from tests.factories.instances import H100, HOT, ONE, instance, owned, rented, site

from gpusolve.candidates.delivery import with_bridges
from gpusolve.models.periods import split_horizon
from gpusolve.optimize.ir import Instance, Stock
from gpusolve.optimize.phased.ir import PhasedInstance
from gpusolve.optimize.phased.solve import solve_phased
from gpusolve.optimize.solve import solve
from gpusolve.optimize.validate import check

BLOCKED = dataclasses.replace(H100, buyable=False)  # none may be bought (market cn)


def _owned_elsewhere(move_cost: int | None, resale: int = 0) -> Instance:
    # Two owned h100 sit at "old", a site no option can use (its racks cannot take them);
    # w needs 2 h100 at sz, or rents for 3,000.
    return instance(
        ("w",),
        (owned("w|own", "w", 2),),
        cloud=(rented("w|rent", "w", 1, 3000),),
        skus=(BLOCKED, HOT),
        stock=(Stock("h100", "old", 2, resale=resale, move_cost=move_cost),),
    )


def test_moving_owned_servers_to_a_rack_that_can_host_them_beats_renting() -> None:
    # Moved at 100 each: a rack 5 x 12 = 60, energy 2 x 10 x 12 = 240, moves 200: 500,
    # against 3,000 renting.
    solution = solve(_owned_elsewhere(100), ONE)
    assert [c.option for c in solution.choices] == ["w|own"]
    assert solution.moved == {("h100", "old", "sz"): 2}
    assert solution.bought == {}
    assert solution.costs is not None and solution.costs.tco == 500
    assert check(_owned_elsewhere(100), solution) == []


def test_servers_that_may_not_move_leave_the_workload_to_rent() -> None:
    solution = solve(_owned_elsewhere(None), ONE)
    assert [c.option for c in solution.choices] == ["w|rent"]
    assert solution.moved == {}


def test_a_move_dearer_than_renting_is_not_made_and_the_servers_are_sold() -> None:
    # Moving at 1,500 each: 60 + 240 + 3,000 = 3,300 > 3,000 renting; sold at 50 each the
    # objective credits 100 apart from the TCO.
    solution = solve(_owned_elsewhere(1500, resale=50), ONE)
    assert [c.option for c in solution.choices] == ["w|rent"]
    assert solution.costs is not None and solution.costs.resale == 100


def test_a_schedule_moves_them_as_the_single_plan_does() -> None:
    # One period of 12 months is the single plan: 500.
    periods = split_horizon(12, 12)
    inst = _owned_elsewhere(100)
    pi = PhasedInstance(periods, (inst,), {}, {}, 12)
    s = solve_phased(pi, ONE)
    assert s.status == "optimal" and s.tco == 500
    # Quarters: the same fleet moved once at the start, racked from P0: still 500.
    quarters = split_horizon(12, 3)
    insts = tuple(dataclasses.replace(inst, horizon_months=p.months) for p in quarters)
    insts = tuple(dataclasses.replace(i, cloud=(rented("w|rent", "w", 1, 750),)) for i in insts)
    s = solve_phased(PhasedInstance(quarters, insts, {}, {}, 12), ONE)
    assert s.status == "optimal" and s.tco == 500


def _moved_after(days: float) -> Instance:
    # The two h100 at "old" are out of service `days` while they travel to sz.
    line = Stock("h100", "old", 2, move_cost=100, move_downtime_days=days)
    return with_bridges(dataclasses.replace(_owned_elsewhere(100), stock=(line,)))


def test_a_moved_servers_days_out_of_service_rent_their_workload_meanwhile() -> None:
    # 91 days = 13 weeks = 3 months (52 / 12 weeks a month) of 12: the rental (3,000) x
    # 3 / 12 = 750 while they travel. Moving costs 500 + 750 = 1,250, under 3,000.
    inst = _moved_after(91)
    (at_sz,) = inst.owned[0].placements
    assert at_sz.bridge == 750
    solution = solve(inst, ONE)
    assert [c.option for c in solution.choices] == ["w|own"]
    assert solution.costs is not None and solution.costs.tco == 1250
    assert check(inst, solution) == []
    # 364 days = 12 months: all of the rental, 500 + 3,000 > 3,000: renting wins.
    solution = solve(_moved_after(364), ONE)
    assert [c.option for c in solution.choices] == ["w|rent"]


def _stay_or_move(days: float) -> Instance:
    # Two owned h100 at zz, whose rack rents at 100 a month; sz rents at 5. At zz: a rack
    # 100 x 12 = 1,200 + energy 2 x 10 x 12 = 240: 1,440. Moved to sz: 60 + 240 + moves
    # 2 x 100 + the rental (3,000) over the days out of service.
    return with_bridges(
        instance(
            ("w",),
            (owned("w|own", "w", 2, sites=("sz", "zz")),),
            cloud=(rented("w|rent", "w", 1, 3000),),
            sites=(site(), site("zz", rent=100)),
            skus=(BLOCKED, HOT),
            stock=(Stock("h100", "zz", 2, move_cost=100, move_downtime_days=days),),
        )
    )


def test_servers_move_only_when_the_cheaper_rack_pays_for_the_days_out_of_service() -> None:
    # 91 days: 750 to rent meanwhile, 500 + 750 = 1,250 at sz < 1,440 at zz: they move.
    # At home nothing is bridged.
    inst = _stay_or_move(91)
    assert {p.site: p.bridge for p in inst.owned[0].placements} == {"sz": 750, "zz": 0}
    solution = solve(inst, ONE)
    assert [(c.option, c.site) for c in solution.choices] == [("w|own", "sz")]
    assert solution.costs is not None and solution.costs.tco == 1250
    # 182 days = 26 weeks = 6 months: 1,500 meanwhile, 2,000 at sz > 1,440: they stay.
    solution = solve(_stay_or_move(182), ONE)
    assert [(c.option, c.site) for c in solution.choices] == [("w|own", "zz")]
    assert solution.moved == {}
    assert solution.costs is not None and solution.costs.tco == 1440


def test_a_schedule_rents_while_its_servers_move_in_the_first_period() -> None:
    # 45.5 days = 6.5 weeks = 1.5 months. One period of 12 months is the single plan:
    # 500 + 3,000 x 1.5 / 12 = 875.
    one = split_horizon(12, 12)
    s = solve_phased(PhasedInstance(one, (_moved_after(45.5),), {}, {}, 12), ONE)
    assert s.status == "optimal" and s.tco == 875
    # Quarters, the rental 750 a quarter: half the first quarter, 375, charged once: 875.
    quarters = split_horizon(12, 3)
    inst = dataclasses.replace(_moved_after(45.5), cloud=(rented("w|rent", "w", 1, 750),))
    insts = tuple(
        with_bridges(dataclasses.replace(inst, horizon_months=p.months)) for p in quarters
    )
    s = solve_phased(PhasedInstance(quarters, insts, {}, {}, 12), ONE)
    assert s.status == "optimal" and s.tco == 875


OWNED = """owned:
  servers:
    - server: hgx-a800-8gpu
      count: 4
      site: wuxi-taihu-8kw-air
"""


def test_plan_and_colo_move_an_owned_fleet_to_the_same_site(gpusolve, tmp_path) -> None:
    # Four owned A800 (6.5 kW, SXM) in an 8 kW air rack at Wuxi, which cannot take them
    # (H18: dense SXM boards need enhanced air or liquid). In Yancheng, colo ranks the
    # 40 kW liquid rack (one rack for all four) first; plan runs a 70B service needing
    # exactly those four there. Both move the four at the default 8,000 each: 32,000.
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "currency: CNY\nhorizon_months: 36\nservers: []\nregions: [yancheng]\n" + OWNED,
        encoding="utf-8",
    )
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text(
        "currency: CNY\nhorizon_months: 36\nmargin: 0\nregions:\n  allowed: [yancheng]\n"
        + OWNED
        + "workloads:\n  - name: chat-70b\n    kind: inference\n    model:\n"
        "      preset: llama-2-70b\n    precision: bf16\n    target_tokens_per_s: 14000\n",
        encoding="utf-8",
    )
    colo = gpusolve("colo", str(fleet), "--format", "json")
    assert colo.code == 0, colo.err
    best = json.loads(colo.out)["offers"][0]
    assert best["feasible"] and best["moves"] == 32_000
    plan = gpusolve("plan", "-q", str(reqs), "--format", "json")
    assert plan.code == 0, plan.err
    data = json.loads(plan.out)
    (chat,) = data["deployments"]
    (held,) = data["inventory"]["servers"]
    assert chat["site"] == best["offer"] == "yancheng-wind-40kw-liquid-ib"
    assert held["moved"] == {best["offer"]: 4} and held["move_cost"] == 32_000
    # Both state the week the four are out of service (the default, 7 days).
    assert best["servers_moved"] == 4 and best["move_downtime_days"] == 7
    assert held["move_downtime_days"] == 7
    assert "moved from wuxi-taihu-8kw-air, 7 days out of service" in chat["delivery"]
    # Pinned (movable: false), colo refuses every other site and plan cannot use them.
    pinned = OWNED + "      movable: false\n"
    fleet.write_text(fleet.read_text(encoding="utf-8").replace(OWNED, pinned), encoding="utf-8")
    colo = gpusolve("colo", str(fleet), "--format", "json")
    assert not any(r["feasible"] for r in json.loads(colo.out)["offers"])


def test_owned_servers_at_work_at_home_do_not_stop_a_purchase_elsewhere() -> None:
    # x runs on the 2 owned h100 at zz (movable); y needs 1 h100 at sz. Moving one would
    # leave x short, so y's server is bought: 1,000 + a rack at each site 2 x 5 x 12 = 120
    # + energy 3 x 10 x 12 = 360: 1,480.
    inst = instance(
        ("x", "y"),
        (owned("x|own", "x", 2, sites=("zz",)), owned("y|own", "y", 1, sites=("sz",))),
        sites=(site(), site("zz")),
        stock=(Stock("h100", "zz", 2, move_cost=100),),
    )
    solution = solve(inst, ONE)
    assert solution.status == "optimal"
    assert solution.bought == {("h100", "sz"): 1} and solution.moved == {}
    assert solution.costs is not None and solution.costs.tco == 1480
    assert check(inst, solution) == []
