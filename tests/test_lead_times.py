"""Delivery lead times: a server works only from its delivery, in a single plan (its
workload rents its cheapest rental until then) and in a schedule (a purchase delivered
after its period ends works from the first period starting after delivery). Hand-built
instances; the arithmetic is in the comments.

The world (tests/factories/instances.py): server h100 at 1,000 (10 kW, 8 U), site sz of
20 kW racks at 5 a month (two per rack), energy 10 per server-month."""

from __future__ import annotations

import dataclasses
import datetime
import json

import yaml
from tests.factories.instances import ONE, instance, owned, rented
from tests.support.shipped import ROOT

from gpusolve.candidates.delivery import bridge_cost, with_bridges
from gpusolve.models.catalog import Server
from gpusolve.models.periods import first_working_period, split_horizon
from gpusolve.models.requirements import Requirements
from gpusolve.optimize.ir import Instance, Stock
from gpusolve.optimize.phased.ir import PhasedInstance
from gpusolve.optimize.phased.solve import solve_phased
from gpusolve.optimize.solve import solve


def test_the_bridge_is_the_cheapest_rental_over_the_weeks_to_delivery() -> None:
    # 13 weeks = 3 months (52 / 12 weeks a month) of a 36-month horizon: 1/12 of 36,000.
    assert bridge_cost(36_000, 13, 36) == 3_000
    assert bridge_cost(36_000, 0, 36) == 0
    assert bridge_cost(36_000, 52 * 4, 36) == 36_000  # longer than the horizon: all of it


def _late(inst: Instance, weeks: int) -> Instance:
    """`inst` with its h100 delivered `weeks` after order, bridged."""
    late = dataclasses.replace(inst.skus["h100"], lead_time_days=7 * weeks)
    return with_bridges(dataclasses.replace(inst, skus={**inst.skus, "h100": late}))


def _buy_or_rent(**kw: object) -> Instance:
    # w on 1 h100 over 12 months: 1,000 + a rack 5 x 12 + energy 10 x 12 = 1,180, or rent
    # for 1,500 (or 2,000 at the dearer offer).
    return instance(
        ("w",),
        (owned("w|own", "w", 1),),
        cloud=(rented("w|a", "w", 1, 1500, offer="a"), rented("w|b", "w", 1, 2000, offer="b")),
        **kw,
    )


def test_a_lead_time_in_a_single_plan_rents_until_delivery() -> None:
    # No lead time: buying (1,180) beats renting (1,500).
    assert [c.option for c in solve(_buy_or_rent(), ONE).choices] == ["w|own"]
    # 13 weeks: the workload rents its cheapest rental (1,500) for 3 of 12 months, 375,
    # so buying costs 1,555 and renting (1,500) wins.
    late = _late(_buy_or_rent(), 13)
    assert late.owned[0].bridge == 375
    solution = solve(late, ONE)
    assert [c.option for c in solution.choices] == ["w|a"]
    # 4 weeks (0.92 months): 115 to bridge, buying costs 1,295 and wins; the TCO has it.
    soon = _late(_buy_or_rent(), 4)
    solution = solve(soon, ONE)
    assert [c.option for c in solution.choices] == ["w|own"]
    assert solution.costs is not None and solution.costs.tco == 1180 + 115


def test_servers_already_owned_wait_for_no_delivery() -> None:
    held = _late(_buy_or_rent(stock=(Stock("h100", "sz", 1),)), 13)
    assert held.owned[0].bridge == 0
    assert held.owned[0].placements[0].bridge == 0


def test_owned_servers_too_few_wait_for_the_rest_to_be_delivered() -> None:
    # w needs 2 h100 at sz, 1 is owned there: the second is bought and delivered in 13
    # weeks (3 of 12 months), so w rents its cheapest rental (1,500) meanwhile: 375.
    inst = dataclasses.replace(
        _buy_or_rent(stock=(Stock("h100", "sz", 1),)), owned=(owned("w|own", "w", 2),)
    )
    held = _late(inst, 13)
    assert held.owned[0].bridge == 0
    assert held.owned[0].placements[0].bridge == 375


def test_a_20_week_lead_time_on_the_only_server_rents_the_first_months() -> None:
    # Quarters over 12 months; 20 weeks = 4.6 months: ordered at month 0, the server works
    # from P2 (month 6). w runs all year on it or rents at 200 a month. Renting P0 and P1
    # (1,200), buying in P0 (1,000), a rack from P2 (5 x 6 = 30) and energy (10 x 6 = 60):
    # 2,290, against 2,400 renting all year and 1,800 + 1,000 + 15 + 30 buying in P1.
    periods = split_horizon(12, 3)
    works = tuple(first_working_period(p, 20, periods) for p in periods)
    assert works == (2, 3, None, None)
    insts = tuple(
        instance(
            ("w",),
            (owned(f"w|own|{p.index}", "w", 1),),
            cloud=(rented(f"w|rent|{p.index}", "w", 1, 200 * p.months),),
            horizon_months=p.months,
        )
        for p in periods
    )
    pi = PhasedInstance(periods, insts, {"h100": (1000,) * 4}, {"h100": works}, 12)
    s = solve_phased(pi, ONE)
    assert s.status == "optimal"
    assert [pp.choices[0].offer is not None for pp in s.periods] == [True, True, False, False]
    assert s.periods[0].bought == {("h100", "sz"): 1}
    assert s.tco == 2290


def test_a_purchase_delivered_within_its_period_rents_until_then_in_a_schedule() -> None:
    # One period of 12 months is the single plan: 13 weeks' lead bridged at 375 (3 of 12
    # months of the 1,500 rental), so renting (1,500) beats buying (1,180 + 375).
    periods = split_horizon(12, 12)
    works = tuple(first_working_period(p, 13, periods) for p in periods)
    assert works == (0,)
    inst = _late(_buy_or_rent(), 13)
    s = solve_phased(PhasedInstance(periods, (inst,), {"h100": (1000,)}, {"h100": works}, 12), ONE)
    assert s.status == "optimal" and s.tco == 1500
    soon = _late(_buy_or_rent(), 4)
    s = solve_phased(PhasedInstance(periods, (soon,), {"h100": (1000,)}, {"h100": works}, 12), ONE)
    assert s.tco == 1180 + 115


def test_every_shipped_server_has_a_lead_time_with_its_source() -> None:
    data = yaml.safe_load((ROOT / "catalog" / "servers.yaml").read_text(encoding="utf-8"))
    for raw in data["servers"]:
        server = Server.model_validate(raw)
        assert server.lead_time_weeks > 0, server.id
        source = server.lead_time_source or ""
        assert source.startswith("estimate") or "http" in source or "via" in source, server.id


def test_a_start_date_dates_each_delivery(gpusolve, tmp_path) -> None:
    # The shipped south/north example buys one pcie8-rtx5090d-v2 box (3 weeks, an
    # estimate of the PCIe integrators' channel): ordered on Monday 2027-01-04, it works
    # from 2027-01-25, 21 days later.
    reqs = Requirements.model_validate(
        {
            "start": datetime.date(2027, 1, 4),
            "workloads": [
                {
                    "name": "w",
                    "kind": "inference",
                    "model": {"preset": "llama-2-7b"},
                    "concurrency": 1,
                }
            ],
        }
    )
    assert reqs.start == "2027-01-04" and reqs.start_day == datetime.date(2027, 1, 4)
    text = (ROOT / "examples" / "south-latency-north-batch.yaml").read_text(encoding="utf-8")
    path = tmp_path / "dated.yaml"
    path.write_text(text + "start: 2027-01-04\n", encoding="utf-8")
    result = gpusolve("plan", "-q", str(path), "--format", "json")
    assert result.code == 0, result.err
    owned = [d for d in json.loads(result.out)["deployments"] if d["mode"] == "owned"]
    assert owned and all(d["delivery"].startswith("2027-01-25, 3 weeks") for d in owned)
