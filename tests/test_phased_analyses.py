"""The analyses of a purchase schedule (`plan` with `periods:`) on hand-built instances:
the smallest set of requirements that conflict over the periods and how far each must
move, the next-best distinct schedules, and a schedule with an item forced in.

The world (tests/factories/instances.py): server h100 at 1,000 (10 kW, 8 U), site sz of
20 kW racks at 5 a month, energy 10 per server-month; a dearer server `fast` at 3,000."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from tests.factories.instances import H100, HOT, ONE, instance, owned, rented, sku
from tests.support.phased import CHAT_NORTH
from tests.support.phased import QUARTERS as QUARTERLY
from tests.support.phased import SCHEDULE_SCHEMA as SCHEDULE

from gpusolve.models.periods import Period, split_horizon
from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption, Requirement
from gpusolve.optimize.phased.alternatives import alternatives, forced, schedule_key
from gpusolve.optimize.phased.explain import explain_phased, move
from gpusolve.optimize.phased.ir import PhasedInstance

FAST = sku("fast", 3000, 10_000, 8)
QUARTERS = split_horizon(12, 3)  # P0..P3, all in fiscal year 0


def _insts(
    opts: tuple[OwnedOption, ...], cloud: tuple[CloudOption, ...] = (), n: int = 4
) -> tuple[Instance, ...]:
    """n periods' instances, each as long as its period: quarters, or one year for n=1."""
    months = 3 if n > 1 else 12
    return tuple(
        instance(("w",), opts, cloud=cloud, skus=(H100, HOT, FAST), horizon_months=months)
        for _ in range(n)
    )


def _reqs(*names: str) -> dict[str, Requirement]:
    demand = [f"demand:w:{p}" for p in range(4)]
    return {n: Requirement(n, n) for n in (*names, *demand)}


def _pi(
    insts: tuple[Instance, ...],
    price: dict[str, tuple[int | None, ...]],
    works_from: dict[str, tuple[int | None, ...]],
    periods: tuple[Period, ...] = QUARTERS,
    **kw: object,
) -> PhasedInstance:
    return PhasedInstance(periods, insts, price, works_from, periods[-1].end_month, **kw)  # type: ignore[arg-type]


NOW = (0, 1, 2, 3)  # works in the period it is bought
NEXT = (1, 2, 3, None)  # a lead time under a quarter: works from the next period


def test_a_year0_budget_a_lead_time_and_a_start_conflict_together() -> None:
    # w needs one server from month 0, no rental. The cheap h100 (1,000) arrives a quarter
    # late; `fast` (3,000) works at once; year 0 allows 1,500. P0 is served only by fast,
    # which the budget forbids. Relax any one of the three and a schedule exists: the budget
    # (fast at 3,000), the lead time (h100 works in P0), the start (h100 bought in P0 serves
    # P1 on). No two of them conflict alone: the conflict is all three.
    opts = (owned("w|h100", "w", 1), owned("w|fast", "w", 1, sku="fast"))
    pi = _pi(
        _insts(opts),
        {"h100": (1000,) * 4, "fast": (3000,) * 4},
        {"h100": NEXT, "fast": NOW},
        capex_by_year=(1500,),
    )
    reqs = _reqs("capex_year:0", "lead_time:h100")
    found = explain_phased(pi, reqs, ONE)
    assert found is not None and found.minimal
    assert set(found.conflict) == {"capex_year:0", "lead_time:h100", "demand:w:0"}
    budget = move(pi, reqs, "capex_year:0", ONE)
    assert (budget.outcome, budget.needed) == ("least", 3000)  # fast alone, in year 0
    start = move(pi, reqs, "demand:w:0", ONE)
    assert (start.outcome, start.needed) == ("least", 1)  # served from P1 on
    assert move(pi, reqs, "lead_time:h100", ONE).outcome == "least"


def test_no_rental_and_no_server_working_in_the_first_period_names_both() -> None:
    # Only h100, a quarter's lead time, no rental: nothing can serve P0.
    pi = _pi(_insts((owned("w|h100", "w", 1),)), {"h100": (1000,) * 4}, {"h100": NEXT})
    reqs = _reqs("lead_time:h100")
    found = explain_phased(pi, reqs, ONE)
    assert found is not None
    assert set(found.conflict) == {"lead_time:h100", "demand:w:0"}
    # With a rental in P0 the same requirements hold together.
    rental = (rented("w|cloud", "w", 1, 600),)
    pi = _pi(_insts((owned("w|h100", "w", 1),), rental), {"h100": (1000,) * 4}, {"h100": NEXT})
    assert explain_phased(pi, reqs, ONE) is None


def test_a_server_not_yet_orderable_conflicts_with_the_start_and_says_when_it_would_do() -> None:
    # h100 can be ordered from P2 (month 6); w runs from P0 with no rental. Ordered in P0 it
    # would do: the move is "orderable from P0".
    pi = _pi(
        _insts((owned("w|h100", "w", 1),)),
        {"h100": (1000,) * 4},
        {"h100": NOW},
        available_period={"h100": 2},
    )
    reqs = _reqs("available:h100")
    found = explain_phased(pi, reqs, ONE)
    assert found is not None and "available:h100" in found.conflict
    assert len(found.conflict) == 2  # and the demand of one early period
    assert move(pi, reqs, "available:h100", ONE).needed == 0


def test_rent_as_you_go_with_every_rental_outside_the_regions_names_the_regions() -> None:
    # The only rental is outside the allowed regions; renting as you go buys nothing.
    rental = (rented("w|cloud", "w", 1, 600, violates=frozenset({"regions:w"})),)
    pi = _pi(_insts((owned("w|h100", "w", 1),), rental), {"h100": (1000,) * 4}, {"h100": NOW})
    reqs = _reqs("regions:w")
    assert explain_phased(pi, reqs, ONE) is None  # buying serves it
    found = explain_phased(pi, reqs, ONE, "rent")
    assert found is not None
    assert "regions:w" in found.conflict and len(found.conflict) == 2


def test_top_k_gives_the_next_distinct_schedule_with_its_delta() -> None:
    # One year, one period: w on one h100 (1,000 + rack 60 + energy 120 = 1,180) or one
    # hot (800 + 60 + 120 = 980). Best: hot; next: h100 (+200); no third distinct one.
    periods = split_horizon(12, 12)
    opts = (owned("w|h100", "w", 1), owned("w|hot", "w", 1, sku="hot"))
    insts = _insts(opts, n=1)
    pi = _pi(insts, {"h100": (1000,), "hot": (800,)}, {"h100": (0,), "hot": (0,)}, periods)
    found = alternatives(pi, 2, ONE)
    assert [s.tco for s in found] == [980, 1180]
    assert schedule_key(found[0]) != schedule_key(found[1])


def test_why_not_forces_the_item_into_some_period() -> None:
    periods = split_horizon(12, 12)
    opts = (owned("w|h100", "w", 1), owned("w|hot", "w", 1, sku="hot"))
    pi = _pi(
        _insts(opts, n=1), {"h100": (1000,), "hot": (800,)}, {"h100": (0,), "hot": (0,)}, periods
    )
    with_h100 = forced(pi, lambda _p, key, _s: key == "w|h100", ONE)
    assert with_h100 is not None and with_h100.tco == 1180
    assert forced(pi, lambda _p, key, _s: key == "none", ONE) is None


CHAT = CHAT_NORTH + QUARTERLY


def test_plan_says_why_renting_as_you_go_fails_and_takes_top_k(gpusolve, tmp_path: Path) -> None:
    # No cloud offer is in northern Jiangsu: renting as you go has no schedule, and says so.
    reqs = tmp_path / "phased.yaml"
    reqs.write_text(CHAT, encoding="utf-8")
    result = gpusolve("plan", "-q", str(reqs), "--format", "json", "--top-k", "1")
    assert result.code == 0, result.err
    schedule = json.loads(result.out)
    jsonschema.validate(schedule, SCHEDULE)
    rent = next(i for i in schedule["infeasibility"] if i["schedule"] == "rent-as-you-go")
    assert "no cloud offer in the allowed regions [苏北]" in rent["reason"]
    # The inputs name the cause; no conflict search re-solves the model for a baseline.
    assert rent["conflicting"] == []
    for alt in schedule["alternatives"]:
        assert alt["delta"] >= 0


def test_why_not_over_periods_gives_the_reason_or_the_delta(gpusolve, tmp_path: Path) -> None:
    reqs = tmp_path / "phased.yaml"
    reqs.write_text(CHAT, encoding="utf-8")
    result = gpusolve("plan", "-q", str(reqs), "--format", "json", "--why-not", "h20-96gb")
    assert result.code == 0, result.err
    why = json.loads(result.out)["why_not"]
    assert why["item"] == "h20-96gb"
    if why["in_schedule"]:
        assert why["delta"] is None
    else:  # its rental is outside the regions; forced in as a server, it costs more
        assert any("not allowed" in line for line in why["lines"]) or why["delta"] >= 0
    unknown = gpusolve("plan", "-q", str(reqs), "--why-not", "no-such-card")
    assert unknown.code == 2 and "no-such-card" in unknown.err
