"""Procurement over time: the periods a horizon splits into and how figures move over them.

The input fields (`Periods`, a workload's `Growth`, a catalogue item's `PriceTrend`) and the
pure arithmetic on them: where each period starts, a workload's demand factor in a period,
a price's factor at a month, the fiscal year a month falls in, the first period a server
bought in a period works in. Months count from 0 (the plan's start); a period covers
[start_month, start_month + months).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from gpusolve.models.common import FiniteFloat, PositiveFloat, StrictModel

MAX_MONTH = 120  # the longest horizon the requirements accept
# How far a workload's demand may move within one plan, as a multiple of the figure it
# states (estimate, not a published bound): 10^6 is 2^20, doubling every six months for
# the longest (ten-year) horizon; a million times less is a service turned off. Beyond
# either, the figures the periods are sized for leave every range the workload's own
# fields accept (and once reached 1e300, or underflowed to 0).
MIN_DEMAND_MULTIPLE = 1e-6
MAX_DEMAND_MULTIPLE = 1e6
# One growth step: x1000 or /1000 per step already reaches either multiple in two steps.
MIN_GROWTH_FACTOR = 1e-3
MAX_GROWTH_FACTOR = 1e3
WEEKS_PER_MONTH = 52 / 12  # a lead time in weeks, as months
MONTHS_PER_YEAR = 12


class Periods(StrictModel):
    """How the horizon splits into decision periods (purchases, racks and rentals are
    decided per period)."""

    length_months: int = Field(
        ge=1,
        le=MAX_MONTH,
        description="Months per period (3 = quarters). The last period is shorter when the "
        "horizon is not a multiple of it. One period (length >= the horizon) is the "
        "single plan, unchanged.",
    )


class Growth(StrictModel):
    """Demand that grows (or shrinks) geometrically: x `factor` every `every_months`."""

    factor: PositiveFloat = Field(
        ge=MIN_GROWTH_FACTOR,
        le=MAX_GROWTH_FACTOR,
        description="Demand multiplier over `every_months` (2 = doubles, 0.5 = halves).",
    )
    every_months: int = Field(default=12, ge=1, le=MAX_MONTH)


class PriceTrend(StrictModel):
    """How a catalogue price moves over the horizon: a yearly rate, with its source."""

    yearly_rate: float = Field(
        ge=-0.9,
        le=10,
        description="Yearly change of the price, compounded monthly (-0.15 = 15% cheaper "
        "each year).",
    )
    source: str = Field(min_length=3, description="Where the trend comes from.")


# A catalogue card's or server's timing fields (models/catalog.py).
AvailableFromMonth = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_MONTH,
        description="With `periods`: the first month it can be bought or rented (a card "
        "that ships later).",
    ),
]
ItemPriceTrend = Annotated[
    PriceTrend | None,
    Field(
        description="With `periods`: how its price moves per year (servers: their own, else "
        "their card's), with a source."
    ),
]


@dataclass(frozen=True)
class Period:
    index: int
    start_month: int
    months: int

    @property
    def end_month(self) -> int:
        return self.start_month + self.months

    @property
    def label(self) -> str:
        return f"P{self.index} (months {self.start_month}-{self.end_month})"


def split_horizon(horizon_months: int, length_months: int) -> tuple[Period, ...]:
    """The periods, in order; the last one takes what is left of the horizon."""
    starts = range(0, horizon_months, length_months)
    return tuple(Period(i, s, min(length_months, horizon_months - s)) for i, s in enumerate(starts))


def price_factor(trend: PriceTrend | None, month: int) -> float:
    """A price at `month` as a share of today's."""
    if trend is None:
        return 1.0
    return float((1.0 + trend.yearly_rate) ** (month / MONTHS_PER_YEAR))


def demand_factor(
    growth: Growth | None, by_period: list[float] | None, period: Period, start_month: int
) -> float:
    """A workload's demand in `period` as a multiple of the figure it states: the list's
    entry for the period (the last entry repeats), else the growth from its start month
    to the period's start, else 1."""
    if by_period is not None:
        return by_period[min(period.index, len(by_period) - 1)]
    if growth is None:
        return 1.0
    elapsed = max(0, period.start_month - start_month)
    return float(growth.factor ** (elapsed / growth.every_months))


DemandMultiple = Annotated[FiniteFloat, Field(ge=MIN_DEMAND_MULTIPLE, le=MAX_DEMAND_MULTIPLE)]


def demand_range(
    growth: Growth | None,
    by_period: list[float] | None,
    periods: tuple[Period, ...],
    months: tuple[int, int | None],
) -> tuple[float, float]:
    """The smallest and largest demand factor over the periods a workload running over
    `months` (start, end) is active in (1 when nothing moves it), computed in logarithms
    so that a factor compounded past a float's range is compared, not overflowed."""
    start, end = months
    if by_period is not None:
        used = by_period[: len(periods)]
        return min(used), max(used)
    running = [p for p in periods if active(p, start, end)]
    if growth is None or not running:
        return 1.0, 1.0
    elapsed = max(0, running[-1].start_month - start)
    exponent = elapsed / growth.every_months * math.log(growth.factor)
    extreme = math.exp(max(-700.0, min(700.0, exponent)))
    return (min(1.0, extreme), max(1.0, extreme))


def active(period: Period, start_month: int, end_month: int | None) -> bool:
    """A workload runs in a period when their months overlap."""
    end = end_month if end_month is not None else MAX_MONTH + 1
    return start_month < period.end_month and period.start_month < end


def active_months(period: Period, start_month: int, end_month: int | None) -> int:
    end = min(period.end_month, end_month if end_month is not None else period.end_month)
    return max(0, end - max(period.start_month, start_month))


def fiscal_year(month: int) -> int:
    """Fiscal years are the plan's years: months 0-11 are year 0."""
    return month // MONTHS_PER_YEAR


def first_working_period(
    bought: Period, lead_time_weeks: float, periods: tuple[Period, ...]
) -> int | None:
    """The first period a server bought at the start of `bought` works in: `bought` itself
    when it is delivered before that period ends (its workloads rent until delivery:
    `candidates/delivery.py`), else the first period starting after its delivery; None
    when it arrives after the horizon."""
    delivered = bought.start_month + lead_time_weeks / WEEKS_PER_MONTH
    if delivered < bought.start_month + bought.months - 1e-9:
        return bought.index
    for p in periods[bought.index + 1 :]:
        if p.start_month >= delivered - 1e-9:
            return p.index
    return None


def cohort_age_months(bought: Period, horizon_months: int) -> int:
    """A purchase cohort's age at the end of the horizon (bought at its period's start)."""
    return horizon_months - bought.start_month
