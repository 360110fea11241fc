"""Energy by duty and the finance terms of the TCO, kept exact and linear.

Energy: every owned server draws its idle power for the whole horizon (a coefficient per
(SKU, site) server, as `Site.energy_month`), and each chosen option adds what its servers
draw above idle for the hours its workload runs (`Placement.busy_energy`, a coefficient per
(option, site) choice). Busy power is the requirements' `utilisation` x peak (the rule the
plan always used for energy); idle power is the server's catalogue figure or the rule
parameter `idle_power_fraction` x peak (params.py, with its source).

The candidates stage calls the coefficient functions with catalogue figures (plain floats
in, whole money units out); the model calls the `*_cost` builders to add their terms.

Bandwidth: a used site pays its offer's included bandwidth (`Site.bandwidth_month`, as
before) and, when the workloads placed there need more (`OwnedOption.bandwidth_mbps`, the
busiest slot's sum), each Mbps beyond it at the offer's price per Mbps-month.

Finance: when the requirements ask for it (`finance.residual_value`, off by default), what
the owned servers would fetch at the horizon is a credit in the objective (`Sku.residual`,
the model's `residual`), shown beside the TCO and never inside it; the capex budget still
counts the full price. VAT scales every coefficient
once in the candidates stage; racks are paid for the offer's minimum term when longer than
the horizon and a set-up fee once per site used (`Site.rent_months`, `Site.setup_fee`); N+1
adds a Bool per (SKU, site) (`spare_flags`); each cloud option is priced at the cheapest
tier its use allows (`cloud_tiers`), precomputed, so the model stays exact and linear.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from gpusolve.models.money import HOURS_PER_MONTH, to_money
from gpusolve.models.params import Params
from gpusolve.optimize.ir import SLOTS_COVERED

# Defaults of the rule parameters (params.py documents each with its source): the idle
# share of peak power, and the straight-line book value of a server (useful life, salvage).
IDLE_POWER_FRACTION: float = Params().idle_power_fraction
USEFUL_LIFE_MONTHS: int = Params().server_useful_life_months
SALVAGE_FRACTION: float = Params().server_salvage_fraction


@dataclass(frozen=True)
class Terms:
    """The plan-level finance parameters, resolved once from the rules and requirements."""

    idle_power_fraction: float = IDLE_POWER_FRACTION
    useful_life_months: int = USEFUL_LIFE_MONTHS
    salvage_fraction: float = SALVAGE_FRACTION
    residual_value: bool = False
    # The user's resale curve, (month, share of the price) points in month order; empty:
    # straight-line book value.
    resale_curve: tuple[tuple[int, float], ...] = ()


def idle_power_kw(
    peak_kw: float, catalogue_idle_kw: float | None, fraction: float = IDLE_POWER_FRACTION
) -> float:
    """The catalogue's idle figure, else the rule's fraction of peak (never above peak)."""
    idle = catalogue_idle_kw if catalogue_idle_kw is not None else fraction * peak_kw
    return min(idle, peak_kw)


def busy_power_kw(peak_kw: float, utilisation: float, idle_kw: float) -> float:
    """Average draw while a workload runs: utilisation x peak, and never below idle (a busy
    server does not draw less than an idle one)."""
    return max(utilisation * peak_kw, idle_kw)


def energy_price_per_kwh(pue: float, price_per_kwh: float, power_included: bool) -> float:
    """What one kWh at the server costs at the meter: PUE x tariff; zero when the rack price
    bundles power."""
    return 0.0 if power_included else pue * price_per_kwh


def idle_energy_month(idle_kw: float, price_per_server_kwh: float) -> int:
    """One server's idle energy over one month, whole units (it draws this every hour)."""
    return to_money(idle_kw * HOURS_PER_MONTH * price_per_server_kwh)


def busy_hours(run_hours: float, slot_hours_per_month: float, horizon_months: int) -> float:
    """Hours a workload runs over the horizon, within the hours its slot has."""
    return min(run_hours, slot_hours_per_month * horizon_months)


def busy_energy(busy_kwh: float, price_per_server_kwh: float) -> int:
    """The energy an option's servers draw above idle while its workload runs, over the
    horizon, whole units: (servers x (busy - idle) kW x hours) x PUE x tariff."""
    return to_money(busy_kwh * price_per_server_kwh)


# --- residual value ------------------------------------------------------------------

# Off by default (`Terms.residual_value`). Accelerators' resale prices fall faster than a
# straight-line book value and steeply once the next generation ships: Silicon Data's
# analysis of secondary-market listings finds H100 prices falling sharply after about two
# years of service, used H100s trading at US$15,000-28,000 (computeforecast.com, "The
# secondary market for AI hardware", 2026) against US$25,000-30,000 new in 2023
# (catalog-facts §2c, Raymond James via epoch-research). No published curve
# is firm enough to assume, so the user states one (`finance.resale_curve`); without it the
# credit is the book value below, labelled as such.
#
# Book value: a server's value falls straight-line from its price to a salvage fraction
# over its useful life (assumption, confidence C): the rule parameters
# server_useful_life_months (60: Amazon shortened servers' useful life from six to five
# years from 2025-01-01, Amazon.com 10-K for 2024, note 1; Chinese tax law allows no less
# than 3 years for electronic equipment, 企业所得税法实施条例 第六十条) and
# server_salvage_fraction (0.05: the customary 3-5% 预计净残值率 of Chinese fixed-asset
# accounting, at its top).


def residual_fraction(
    age_months: float,
    useful_life_months: float = USEFUL_LIFE_MONTHS,
    salvage_fraction: float = SALVAGE_FRACTION,
) -> float:
    """Share of its price a server is worth at `age_months`: straight-line to salvage."""
    left = 1.0 - min(1.0, age_months / useful_life_months)
    return salvage_fraction + (1.0 - salvage_fraction) * left


def resale_fraction(age_months: float, curve: Sequence[tuple[int, float]]) -> float:
    """Share of its price a server fetches at `age_months` on a resale curve: linear between
    its points, from (0, 1) to the first; the last point's share beyond it."""
    points = list(curve)
    if not points or points[0][0] > 0:
        points.insert(0, (0, 1.0))
    for (m0, f0), (m1, f1) in itertools.pairwise(points):
        if age_months <= m1:
            return f0 + (f1 - f0) * (age_months - m0) / (m1 - m0)
    return points[-1][1]


def credit_fraction(age_months: float, terms: Terms) -> float:
    """Share of its price an owned server is credited at `age_months`: 0 when residual
    value is off, else the resale curve where given, else book value."""
    if not terms.residual_value:
        return 0.0
    if terms.resale_curve:
        return resale_fraction(age_months, terms.resale_curve)
    return residual_fraction(age_months, terms.useful_life_months, terms.salvage_fraction)


def credit_basis(terms: Terms) -> str:
    """How the credit was valued, in words (for its line and its source)."""
    if terms.resale_curve:
        points = ", ".join(f"{f:.0%} at month {m}" for m, f in terms.resale_curve)
        return f"resale curve of the requirements (finance.resale_curve: {points})"
    return (
        f"book value, not a resale quote: straight-line over {terms.useful_life_months} months "
        f"to {terms.salvage_fraction:.0%} (rule parameters server_useful_life_months, "
        "server_salvage_fraction)"
    )


def residual_value(price: float, fraction: float) -> int:
    """One server's value at the end of the horizon, whole units."""
    return to_money(price * fraction)


# --- bandwidth by duty -------------------------------------------------------------


def site_bandwidth_mbps(included_mbps: int, demand_by_slot: dict[str, int]) -> int:
    """A used site's internet bandwidth: the offer's included (minimum) Mbps, or the busiest
    slot's summed demand when that is more (day and night work share the line, as they
    share servers, H29)."""
    return max(included_mbps, *demand_by_slot.values(), 0)


def extra_bandwidth_cost(
    model: cp_model.CpModel,
    site_id: str,
    included_mbps: int,
    extra_mbps_cost: int,
    used: cp_model.IntVar,
    demands: Sequence[tuple[str, int, cp_model.IntVar]],
) -> cp_model.LinearExpr:
    """Mbps bought beyond the included bandwidth at one site, priced over the horizon:
    extra >= sum of the demands placed there in each slot - included (when used), extra >= 0.
    `demands` are (slot, Mbps, choice) for the choices with a demand. Linear and exact: the
    objective pushes `extra` down to the busiest slot's excess."""
    by_slot: dict[str, list[tuple[int, cp_model.IntVar]]] = {"day": [], "night": []}
    for slot, mbps, var in demands:
        for t in SLOTS_COVERED[slot]:
            by_slot[t].append((mbps, var))
    most = max(sum(m for m, _ in terms) for terms in by_slot.values())
    extra = model.new_int_var(0, max(0, most - included_mbps), f"bw_extra[{site_id}]")
    for terms in by_slot.values():
        if terms:
            demand = cp_model.LinearExpr.weighted_sum([v for _, v in terms], [m for m, _ in terms])
            model.add(extra >= demand - included_mbps * used)
    return extra_mbps_cost * extra


# --- colocation terms and spares ---------------------------------------------------------


def rent_months(horizon_months: int, site_rent_months: int) -> int:
    """Months a site's racks are paid for: its minimum term when longer than the horizon."""
    return max(horizon_months, site_rent_months)


def spare_flags(
    model: cp_model.CpModel,
    servers: dict[tuple[str, str], cp_model.IntVar],
    users: Mapping[tuple[str, str], Sequence[cp_model.IntVar]],
    demand: Mapping[tuple[str, str], Sequence[cp_model.LinearExpr]],
) -> dict[tuple[str, str], cp_model.IntVar]:
    """N+1: a Bool per (SKU, site), on when any choice there is (spare >= each choice), and
    the servers cover every slot's demand plus it. Linear; the objective keeps a spare off
    where nothing is placed (it costs a server)."""
    out: dict[tuple[str, str], cp_model.IntVar] = {}
    for key in sorted(servers):
        spare = model.new_bool_var(f"spare[{key[0]}@{key[1]}]")
        out[key] = spare
        for var in users.get(key, ()):
            model.add_implication(var, spare)
        for need in demand.get(key, ()):
            model.add(need + spare <= servers[key])
    return out


# --- cloud price tiers -----------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    """One way to pay for a rental, per instance: `quantity` units at `unit_price`."""

    name: str  # "on-demand", "monthly", "reserved 12 months"
    quantity: float
    unit: str  # "instance-hour" or "instance-month"
    unit_price: float

    @property
    def cost(self) -> float:
        return self.quantity * self.unit_price


def cloud_tiers(
    hours: float,
    per_hour: float,
    per_month: float | None,
    reserved: Sequence[tuple[int, float]],
    months_rented: int,
    span_months: int,
) -> list[Tier]:
    """Every tier a rental may use: hourly for the hours it runs; monthly for the months it
    holds an instance (`months_rented`); each reserved term for whole terms covering the
    months the commitment must span (`span_months`: the whole horizon when use recurs)."""
    tiers = [Tier("on-demand", hours, "instance-hour", per_hour)]
    if per_month is not None:
        tiers.append(Tier("monthly", months_rented, "instance-month", per_month))
    for term, price in reserved:
        months = term * math.ceil(span_months / term)
        tiers.append(Tier(f"reserved {term} months", months, "instance-month", price))
    return tiers


def cheapest_tier(tiers: Sequence[Tier]) -> Tier:
    """The cheapest tier (the first listed on a tie: on-demand before monthly ...)."""
    return min(tiers, key=lambda t: t.cost)


def rental_months(
    continuous: bool, runs: float, hours_per_run: float, horizon_months: int
) -> tuple[int, int]:
    """(months an instance is held, months a commitment must span): a service holds it every
    month of the horizon; training holds whole months for each run, and a commitment spans
    the whole horizon unless there is a single run."""
    if continuous:
        return horizon_months, horizon_months
    per_run = max(1, math.ceil(hours_per_run / HOURS_PER_MONTH))
    held = min(horizon_months, math.ceil(runs) * per_run)
    return held, held if runs <= 1 else horizon_months
