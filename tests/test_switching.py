"""Switching costs between periods of a schedule: a workload moves to another platform only
when the move pays (hand-built instances; the arithmetic is in the comments)."""

from __future__ import annotations

from tests.factories.instances import ONE, instance, rented

from gpusolve.models.periods import split_horizon
from gpusolve.models.requirements import Requirements
from gpusolve.optimize.phased.ir import PhasedInstance, PhasedSolution
from gpusolve.optimize.phased.solve import solve_phased
from gpusolve.plan.phased.inputs import DEFAULT_SWITCH_COST_CNY, switch_costs

PERIODS = split_horizon(6, 3)  # two quarters


def _flip(switch_cost: dict[str, int], cards: tuple[dict[str, str], ...] = ()) -> PhasedInstance:
    """w rents offer a or b: a 100 then 150, b 150 then 100 (whole quarter)."""
    insts = tuple(
        instance(
            ("w",),
            (),
            cloud=(
                rented(f"w|a|{p.index}", "w", 1, (100, 150)[p.index], offer="a"),
                rented(f"w|b|{p.index}", "w", 1, (150, 100)[p.index], offer="b"),
            ),
            horizon_months=p.months,
        )
        for p in PERIODS
    )
    return PhasedInstance(PERIODS, insts, {}, {}, 6, cards=cards, switch_cost=switch_cost)


def _offers(s: PhasedSolution) -> list[str | None]:
    return [pp.choices[0].offer for pp in s.periods]


def _solve(pi: PhasedInstance) -> PhasedSolution:
    s = solve_phased(pi, ONE)
    assert s.status == "optimal", s
    return s


def test_without_a_switching_cost_the_schedule_hops_to_the_cheaper_offer() -> None:
    # a then b: 100 + 100 = 200, the cheapest of aa 250, ab 200, ba 300, bb 250.
    s = _solve(_flip({}))
    assert _offers(s) == ["a", "b"]
    assert s.tco == 200


def test_a_move_that_does_not_pay_is_not_made() -> None:
    # Moving costs 80: ab = 200 + 80 = 280 against staying, aa = bb = 250.
    s = _solve(_flip({"w": 80}))
    assert _offers(s)[0] == _offers(s)[1]
    assert s.tco == 250
    assert [pp.costs.switching for pp in s.periods] == [0, 0]


def test_a_move_that_pays_is_made_and_charged_once() -> None:
    # Moving costs 40: ab = 240 < 250; the second quarter carries the 40.
    s = _solve(_flip({"w": 40}))
    assert _offers(s) == ["a", "b"]
    assert s.tco == 240
    assert [pp.costs.switching for pp in s.periods] == [0, 40]


def test_the_same_card_at_another_offer_is_still_a_move() -> None:
    # Both offers rent the same card: another provider is still a re-deployment.
    cards = tuple({f"w|a|{p.index}": "h20", f"w|b|{p.index}": "h20"} for p in PERIODS)
    s = _solve(_flip({"w": 80}, cards))
    assert s.tco == 250


def test_the_default_switching_cost_is_stated_in_cny_only() -> None:
    w = {"name": "w", "kind": "inference", "model": {"preset": "llama-2-7b"}, "concurrency": 1}
    cny = Requirements.model_validate({"workloads": [w, {**w, "name": "v", "switch_cost": 5}]})
    assert switch_costs(cny) == {"w": DEFAULT_SWITCH_COST_CNY, "v": 5}
    usd = Requirements.model_validate({"currency": "USD", "workloads": [w]})
    assert switch_costs(usd) == {"w": 0}
