"""Phased inputs (`plan/phased.py`, `models/periods.py`): periods, demand per period, what
the catalogue offers at a month, and located errors for timing fields without periods."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from tests.support.shipped import ROOT

from gpusolve.load import load_catalog
from gpusolve.models.periods import (
    Growth,
    Period,
    demand_factor,
    first_working_period,
    split_horizon,
)
from gpusolve.models.requirements import Requirements
from gpusolve.plan.phased.inputs import period_catalog, period_requirements

CHAT = {
    "name": "chat",
    "kind": "inference",
    "model": {"preset": "llama-2-7b"},
    "target_tokens_per_s": 100,
}


def test_quarters_and_a_short_last_period() -> None:
    assert [(p.start_month, p.months) for p in split_horizon(10, 3)] == [
        (0, 3),
        (3, 3),
        (6, 3),
        (9, 1),
    ]


def test_demand_doubles_every_six_months_from_the_start_month() -> None:
    growth = Growth(factor=2, every_months=6)
    assert demand_factor(growth, None, Period(2, 6, 3), 0) == pytest.approx(2.0)
    assert demand_factor(growth, None, Period(3, 9, 3), 3) == pytest.approx(2.0)
    assert demand_factor(None, [1, 3], Period(5, 15, 3), 0) == 3  # the last entry repeats


def test_a_lead_time_within_a_quarter_works_in_it_and_a_longer_one_from_the_next() -> None:
    # A quarter is 3 months = 13 weeks (52 / 12 weeks a month): 6 weeks arrive within it
    # (its workloads rent until then); 14 weeks arrive at month 3.23, after P1 starts, so
    # the server works from P2 (month 6) on.
    periods = split_horizon(12, 3)
    assert first_working_period(periods[0], 6, periods) == 0
    assert first_working_period(periods[0], 0, periods) == 0
    assert first_working_period(periods[0], 14, periods) == 2
    assert first_working_period(periods[3], 14, periods) is None
    assert first_working_period(periods[3], 1, periods) == 3


def test_a_period_has_its_running_workloads_and_their_demand() -> None:
    late = {
        **CHAT,
        "name": "late",
        "start_month": 6,
        "demand_growth": {"factor": 2, "every_months": 3},
    }
    reqs = Requirements.model_validate(
        {"horizon_months": 12, "periods": {"length_months": 3}, "workloads": [CHAT, late]}
    )
    assert reqs.phased
    p1, p3 = split_horizon(12, 3)[1], split_horizon(12, 3)[3]
    assert [w.name for w in period_requirements(reqs, p1).workloads] == ["chat"]
    third = period_requirements(reqs, p3)
    assert third.horizon_months == 3
    assert third.workloads[1].target_tokens_per_s == pytest.approx(200)


def test_a_card_available_from_month_12_is_not_in_the_catalogue_before() -> None:
    catalog = load_catalog([ROOT / "catalog"]).catalog
    card = "h20-96gb"
    later = catalog.model_copy(
        update={
            "cards": {
                **catalog.cards,
                card: catalog.cards[card].model_copy(update={"available_from_month": 12}),
            }
        }
    )
    servers = [k for k, s in catalog.servers.items() if s.card == card]
    assert servers
    assert not set(servers) & set(period_catalog(later, 9).servers)
    assert set(servers) <= set(period_catalog(later, 12).servers)


def test_timing_fields_without_periods_are_refused() -> None:
    with pytest.raises(ValidationError, match="add `periods"):
        Requirements.model_validate({"workloads": [{**CHAT, "start_month": 3}]})
    with pytest.raises(ValidationError, match="end_month"):
        Requirements.model_validate(
            {
                "periods": {"length_months": 3},
                "workloads": [{**CHAT, "start_month": 6, "end_month": 3}],
            }
        )


def test_one_period_is_the_single_plan() -> None:
    reqs = Requirements.model_validate(
        {"horizon_months": 12, "periods": {"length_months": 12}, "workloads": [CHAT]}
    )
    assert not reqs.phased


def test_timing_fields_with_one_period_are_refused() -> None:
    with pytest.raises(ValidationError, match="leave one period"):
        Requirements.model_validate(
            {
                "horizon_months": 12,
                "periods": {"length_months": 12},
                "workloads": [{**CHAT, "start_month": 3}],
            }
        )
