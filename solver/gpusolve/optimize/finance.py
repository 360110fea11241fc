"""Energy by duty and the finance terms of the TCO, kept exact and linear.

Energy: every owned server draws its idle power for the whole horizon (a coefficient per
(SKU, site) server, as `Site.energy_month`), and each chosen option adds what its servers
draw above idle for the hours its workload runs (`Placement.busy_energy`, a coefficient per
(option, site) choice). Busy power is the requirements' `utilisation` x peak (the rule the
plan always used for energy); idle power is the server's catalogue figure or
`IDLE_POWER_FRACTION` x peak.

The candidates stage calls the coefficient functions with catalogue figures (plain floats
in, whole money units out); the model calls the `*_cost` builders to add their terms.

Bandwidth: a used site pays its offer's included bandwidth (`Site.bandwidth_month`, as
before) and, when the workloads placed there need more (`OwnedOption.bandwidth_mbps`, the
busiest slot's sum), each Mbps beyond it at the offer's price per Mbps-month.
"""

from __future__ import annotations

from collections.abc import Sequence

from ortools.sat.python import cp_model

from gpusolve.candidates.money import HOURS_PER_MONTH, to_money
from gpusolve.optimize.ir import SLOTS_COVERED

# Idle wall power of a GPU server as a fraction of its peak, when the catalogue gives no
# figure. An idle Hopper SXM GPU reads ~60-75 W of its 700 W TDP in nvidia-smi (P0, no
# work), and the host (two CPUs, DRAM, NVSwitches, NICs, fans at minimum speed, PSU losses)
# keeps ~1.5-2 kW of a 10.2 kW DGX H100 on: ~0.2-0.25 of peak. Assumption (confidence D):
# no vendor publishes an idle figure for the 8-GPU boards; catalog-facts §2b gives the
# peak figures it is a fraction of. Servers with a measured figure set `idle_power_kw`.
IDLE_POWER_FRACTION = 0.25


def idle_power_kw(peak_kw: float, catalogue_idle_kw: float | None) -> float:
    """The catalogue's idle figure, else the documented fraction of peak (never above peak)."""
    idle = catalogue_idle_kw if catalogue_idle_kw is not None else IDLE_POWER_FRACTION * peak_kw
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

# A server's value falls straight-line from its price to a salvage fraction over its useful
# life; what is left at the end of the horizon is credited to the TCO (the capex budget still
# counts the full price). Book value, not a resale quote (assumption, confidence C):
# - useful life 60 months: Amazon shortened the useful life of a subset of its servers and
#   networking equipment from six to five years from 2025-01-01, citing the faster pace of
#   AI/ML technology (Amazon.com 10-K for 2024, note 1 "Use of Estimates"); Chinese tax law
#   lets electronic equipment be depreciated over no less than 3 years (企业所得税法实施条例
#   第六十条), and Chinese IDC operators commonly book servers over 5 years.
# - salvage 5% of the price: the customary 预计净残值率 of 3-5% of Chinese fixed-asset
#   accounting (the former 《工业企业财务制度》 range), at its top.
USEFUL_LIFE_MONTHS = 60
SALVAGE_FRACTION = 0.05


def residual_fraction(
    age_months: float,
    useful_life_months: float = USEFUL_LIFE_MONTHS,
    salvage_fraction: float = SALVAGE_FRACTION,
) -> float:
    """Share of its price a server is worth at `age_months`: straight-line to salvage."""
    left = 1.0 - min(1.0, age_months / useful_life_months)
    return salvage_fraction + (1.0 - salvage_fraction) * left


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
