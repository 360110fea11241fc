"""Money and energy arithmetic in one place, so the rounding is documented once.

The optimiser needs integers. Every coefficient is rounded half-even to a whole unit of
the run currency once, at the level it is charged (per server, per rack-month, per
option), never after multiplying by decision variables. For CNY that is a yuan: on
plans of 10^5-10^8 yuan the rounding error is below 10^-4 of the total.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

HOURS_PER_MONTH = 730.0  # 8,760 h / 12


def to_money(value: float) -> int:
    return int(Decimal(repr(value)).to_integral_value(rounding=ROUND_HALF_EVEN))


def vat_note(factor: float) -> str:
    """How a cost line says its unit price holds VAT (`factor`: 1 + the rate)."""
    return f" incl. VAT {factor - 1:.0%}" if factor != 1.0 else ""


def energy_per_server_month(
    power_kw: float, utilisation: float, pue: float, price_per_kwh: float, power_included: bool
) -> int:
    """kW x utilisation x PUE x hours x price; zero when the rack price bundles power."""
    if power_included:
        return 0
    return to_money(power_kw * utilisation * pue * HOURS_PER_MONTH * price_per_kwh)


def slot_hours_per_month(schedule: str) -> float:
    """Hours a workload runs per month: day and night shifts are 12 h each (H29)."""
    return HOURS_PER_MONTH if schedule == "always" else HOURS_PER_MONTH / 2
