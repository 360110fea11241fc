"""The schedule's model (`optimize/phased/`) on hand-built instances: when to buy, rent and
contract racks over periods. The arithmetic is in the comments.

The world (tests/factories/instances.py): server h100 at 1,000 (10 kW, 8 U), site sz of
20 kW racks at 5 a month (two h100 per rack), energy 10 per server-month."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model
from tests.factories.instances import ONE, instance, owned, rented

from gpusolve.models.periods import Period, split_horizon
from gpusolve.optimize.cpsat import STATUS
from gpusolve.optimize.ir import Instance, Stock
from gpusolve.optimize.phased.ir import PhasedInstance, PhasedSolution
from gpusolve.optimize.phased.model import build_model, objective
from gpusolve.optimize.phased.solve import no_dearer, solve_phased


def _period(p: Period, servers: int | None, cloud_month: int | None = None) -> Instance:
    """Period p's instance: workload w needs `servers` h100 (None: not running), or rents
    for `cloud_month` a month."""
    if servers is None:
        return instance((), (), horizon_months=p.months)
    cloud = (
        ()
        if cloud_month is None
        else (rented(f"w|cloud|{p.index}", "w", 1, cloud_month * p.months),)
    )
    opts = (owned(f"w|{servers}n", "w", servers),) if servers > 0 else ()
    return instance(("w",), opts, cloud=cloud, horizon_months=p.months)


def _phased(
    periods: tuple[Period, ...],
    insts: tuple[Instance, ...],
    prices: tuple[int | None, ...],
    works_from: tuple[int | None, ...] | None = None,
    **kw: object,
) -> PhasedInstance:
    horizon = periods[-1].end_month
    works = works_from if works_from is not None else tuple(range(len(periods)))
    return PhasedInstance(
        periods,
        insts,
        {"h100": prices},
        {"h100": works},
        horizon,
        **kw,  # type: ignore[arg-type]
    )


def _solve(pi: PhasedInstance, mode: str = "free") -> PhasedSolution:
    solution = solve_phased(pi, ONE, mode)  # type: ignore[arg-type]
    assert solution.status == "optimal", solution
    return solution


def test_a_falling_price_and_a_late_workload_buy_late() -> None:
    # Quarters over 12 months; w (2 servers) runs from month 6; the price falls 1,000 ->
    # 700. Buying in P2 at 800: capex 1,600; one rack from month 6: 5 x 6 = 30; energy
    # 2 x 10 x 3 x 2 = 120: 1,750. Buying now would pay 2,000 and idle months on top.
    periods = split_horizon(12, 3)
    insts = tuple(_period(p, 2 if p.start_month >= 6 else None) for p in periods)
    pi = _phased(periods, insts, (1000, 900, 800, 700))
    solution = _solve(pi)
    assert [pp.bought for pp in solution.periods] == [{}, {}, {("h100", "sz"): 2}, {}]
    assert [pp.racks for pp in solution.periods] == [{}, {}, {"sz": 1}, {"sz": 1}]
    assert solution.tco == 1750
    now = _solve(pi, "buy-now")
    # Bought in P0: 2,000; powered off and unracked until they serve from month 6: the rack
    # 5 x 6 = 30, energy 2 x 10 x 6 = 120.
    assert now.tco == 2150


def test_a_lead_time_longer_than_the_first_period_rents_the_first_period() -> None:
    # A server ordered at month 0 arrives after month 3: it works from P1. w runs all year
    # on 1 server or rents at 200 a month. P0 rents (600); one server bought in P0 works
    # from P1: 1,000 + rack 5 x 12 + energy 10 x 9 = 1,150 (the rack is contracted from P0).
    periods = split_horizon(12, 3)
    insts = tuple(_period(p, 1, cloud_month=200) for p in periods)
    pi = _phased(periods, insts, (1000,) * 4, works_from=(1, 2, 3, None))
    solution = _solve(pi)
    first = solution.periods[0]
    assert [c.option for c in first.choices] == ["w|cloud|0"]
    assert sum(pp.costs.capex for pp in solution.periods) == 1000
    assert all(c.sku == "h100" for pp in solution.periods[1:] for c in pp.choices)
    # A rack contracted from P1 on: 5 x 9 = 45; total 600 + 1,000 + 45 + 90.
    assert solution.tco == 1735


def test_a_fiscal_year_budget_splits_a_purchase_across_years() -> None:
    # Two yearly periods; w needs 2 servers in year 0 and 4 in year 1; the price rises
    # 1,000 -> 1,500, so without a budget all 4 are bought at once (4,000 < 2,000 + 3,000
    # + the idle servers' energy 2 x 10 x 12 = 240 and their rack 5 x 24 = 120). A year-0
    # budget of 2,000 buys 2 now, 2 next year. (Two servers bought ahead of need wait
    # powered off in year 0: no energy, no rack.)
    periods = split_horizon(24, 12)
    insts = (_period(periods[0], 2), _period(periods[1], 4))
    free = _solve(_phased(periods, insts, (1000, 1500)))
    assert free.periods[0].bought == {("h100", "sz"): 4}
    budget = _solve(_phased(periods, insts, (1000, 1500), capex_by_year=(2000,)))
    assert [pp.bought for pp in budget.periods] == [{("h100", "sz"): 2}, {("h100", "sz"): 2}]
    assert budget.capex_by_year == {0: 2000, 1: 3000}


def test_a_server_not_yet_available_is_never_bought_before() -> None:
    # The price is None before month 12 (not available); w has no rental: P0 cannot be
    # served, the schedule is infeasible; with a rental, P0 rents and P1 buys.
    periods = split_horizon(24, 12)
    insts = (_period(periods[0], 1), _period(periods[1], 1))
    assert solve_phased(_phased(periods, insts, (None, 1000)), ONE).status == "infeasible"
    insts = (_period(periods[0], 1, cloud_month=500), _period(periods[1], 1, cloud_month=500))
    solution = _solve(_phased(periods, insts, (None, 1000)))
    assert solution.periods[0].bought == {}
    assert solution.periods[1].bought == {("h100", "sz"): 1}


def test_rent_as_you_go_buys_nothing_and_owned_stock_still_works() -> None:
    periods = split_horizon(12, 6)
    insts = tuple(_period(p, 1, cloud_month=500) for p in periods)
    rent = _solve(_phased(periods, insts, (1000, 1000)), "rent")
    assert all(pp.bought == {} for pp in rent.periods)
    assert rent.tco == 6000


# --------------------------------------------------------------------------- properties

DEMAND = st.lists(st.integers(min_value=0, max_value=3), min_size=2, max_size=4)


def _property_instance(
    demand: list[int], prices: list[int], cloud_month: int, bounds: tuple[int, ...]
) -> PhasedInstance:
    """Coarse periods of 3 months each carry `demand`; `bounds` (month starts) split the
    horizon finer; a period's demand and price are those of the month it starts in."""
    horizon = 3 * len(demand)
    starts = sorted({0, *bounds})
    periods = tuple(
        Period(i, s, (starts[i + 1] if i + 1 < len(starts) else horizon) - s)
        for i, s in enumerate(starts)
    )
    insts = tuple(_period(p, demand[p.start_month // 3] or None, cloud_month) for p in periods)
    price = tuple(prices[p.start_month // 3] for p in periods)
    return _phased(periods, insts, price)


@settings(max_examples=15, deadline=None)
@given(
    DEMAND,
    st.lists(st.integers(min_value=300, max_value=1500), min_size=4, max_size=4),
    st.integers(min_value=20, max_value=300),
)
def test_the_phased_optimum_is_never_dearer_than_either_baseline(
    demand: list[int], prices: list[int], cloud_month: int
) -> None:
    bounds = tuple(3 * i for i in range(len(demand)))
    pi = _property_instance(demand, prices, cloud_month, bounds)
    free = _solve(pi)
    baselines = [solve_phased(pi, ONE, mode) for mode in ("buy-now", "rent")]
    best = min(b.objective_value for b in baselines if b.objective_value is not None)
    assert free.objective_value is not None and free.objective_value <= best


@settings(max_examples=15, deadline=None)
@given(
    DEMAND,
    st.lists(st.integers(min_value=300, max_value=1500), min_size=4, max_size=4),
    st.integers(min_value=20, max_value=300),
)
def test_a_baselines_schedule_is_one_of_the_free_models_at_its_own_cost(
    demand: list[int], prices: list[int], cloud_month: int
) -> None:
    # `no_dearer` may return the buy-now schedule as the free one: fixed to it, the free
    # model is feasible at exactly the buy-now cost.
    bounds = tuple(3 * i for i in range(len(demand)))
    pi = _property_instance(demand, prices, cloud_month, bounds)
    buy_now = solve_phased(pi, ONE, "buy-now")
    if buy_now.objective_value is None:
        return
    m, v, exprs = build_model(pi, "free")
    _fix_to(m, v, buy_now)
    tco, penalties, resale = objective(exprs, len(pi.periods))
    goal = tco + penalties - resale
    m.minimize(goal)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert STATUS[solver.solve(m)] == "optimal"
    # The integer objective's own value: CP-SAT's `objective_value` is a double (122.99...).
    assert solver.value(goal) == buy_now.objective_value


def _fix_to(m: cp_model.CpModel, v: Any, s: PhasedSolution) -> None:
    """Every purchase, rack count and choice of the model fixed to the solution's."""
    for (k, site, q), x in v.buy.items():
        m.add(x == s.periods[q].bought.get((k, site), 0))
    for (site, p), r in v.racks.items():
        m.add(r == s.periods[p].racks.get(site, 0))
    chosen = {(p, c.option, c.site) for p, plan in enumerate(s.periods) for c in plan.choices}
    for (p, key, site), x in v.owned.items():
        m.add(x == int((p, key, site) in chosen))
    for (p, key), y in v.cloud.items():
        m.add(y == int((p, key, None) in chosen))


def test_a_search_stopped_dearer_than_a_baseline_returns_the_baselines_schedule() -> None:
    free = PhasedSolution("feasible", "free", objective_value=120, best_bound=80, wall_s=5.0)
    rent = PhasedSolution("optimal", "rent", objective_value=100, best_bound=100)
    buy = PhasedSolution("optimal", "buy-now", objective_value=110, best_bound=110)
    got = no_dearer(free, [buy, rent])
    assert (got.mode, got.status, got.objective_value, got.best_bound) == (
        "free",
        "feasible",
        100,
        80,
    )
    nothing = PhasedSolution("unknown", "free", best_bound=70)
    assert no_dearer(nothing, [buy]).objective_value == 110
    cheaper = PhasedSolution("feasible", "free", objective_value=90, best_bound=80)
    assert no_dearer(cheaper, [buy, rent]) is cheaper
    proven = PhasedSolution("optimal", "free", objective_value=100, best_bound=100)
    assert no_dearer(proven, [rent]) is proven


@settings(max_examples=15, deadline=None)
@given(
    DEMAND,
    st.lists(st.integers(min_value=300, max_value=1500), min_size=4, max_size=4),
    st.integers(min_value=20, max_value=300),
    st.integers(min_value=1, max_value=11),
)
def test_adding_a_period_boundary_never_raises_the_optimum(
    demand: list[int], prices: list[int], cloud_month: int, extra: int
) -> None:
    coarse = tuple(3 * i for i in range(len(demand)))
    extra_month = extra % (3 * len(demand))
    # A boundary inside a coarse period keeps that period's demand and price on both sides.
    base = _property_instance(demand, prices, cloud_month, coarse)
    finer = _property_instance(demand, prices, cloud_month, (*coarse, extra_month))
    a, b = _solve(base), _solve(finer)
    assert a.objective_value is not None and b.objective_value is not None
    assert b.objective_value <= a.objective_value


def test_a_budget_too_tight_for_the_demand_is_named_as_the_cause() -> None:
    # w needs 2 servers from P0 and has no rental; year 0 allows 1,500: no schedule, and
    # without the budget the cheapest spends 2,000 in year 0.
    periods = split_horizon(12, 6)
    insts = tuple(_period(p, 2) for p in periods)
    solution = solve_phased(_phased(periods, insts, (1000, 1000), capex_by_year=(1500,)), ONE)
    assert solution.status == "infeasible"
    assert solution.reason is not None and "year 0: 2,000" in solution.reason


def test_owned_stock_works_from_the_first_period_and_only_the_rest_is_bought() -> None:
    # 1 h100 owned at sz; w needs 2 all year: one bought in P0 (1,000).
    periods = split_horizon(12, 6)
    insts = tuple(
        dataclasses.replace(_period(p, 2), stock=(Stock("h100", "sz", 1),)) for p in periods
    )
    solution = _solve(_phased(periods, insts, (1000, 1000)))
    assert [pp.bought for pp in solution.periods] == [{("h100", "sz"): 1}, {}]
    assert solution.periods[0].working == {("h100", "sz"): 2}
