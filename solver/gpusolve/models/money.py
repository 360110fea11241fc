"""Money and energy arithmetic in one place, so the rounding is documented once.

The optimiser needs integers. Every coefficient is rounded half-even to a whole unit of
the run currency once, at the level it is charged (per server, per rack-month, per
option), never after multiplying by decision variables. For CNY that is a yuan: on
plans of 10^5-10^8 yuan the rounding error is below 10^-4 of the total.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from pydantic import Field

from gpusolve.models.common import OutModel, StrictModel

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


# --- how the money is paid: the terms file (catalog/finance/terms.yaml) and the cash view ---


class Discount(StrictModel):
    annual_rate: float = Field(ge=0, le=1, description="Discount rate of the NPV, a year.")
    source: str


class PaymentTerms(StrictModel):
    deposit_at_order: float = Field(
        ge=0, le=1, description="Share of a purchase paid at order; the rest at delivery."
    )
    source: str


# The fields that state a financing's terms: the terms file's `Financing`, the model's
# `ir.FinanceOffer` and the plan's `FinancedServers` carry them under the same names.
FINANCE_TERMS = ("annual_rate", "term_months", "down_payment", "buy_out")


def terms_of(source: object) -> dict[str, Any]:
    """A financing's terms, read off any of the objects that carry them."""
    return {k: getattr(source, k) for k in FINANCE_TERMS}


class Financing(StrictModel):
    """An annuity: a down payment at delivery, equal monthly payments in arrears over the
    term at the rate, and the buy-out with the last payment."""

    annual_rate: float = Field(ge=0, le=1)
    term_months: int = Field(ge=1, le=240)
    down_payment: float = Field(ge=0, le=1, description="Share of the price paid at delivery.")
    buy_out: float = Field(ge=0, le=1, description="Share of the price paid at the term's end.")
    source: str


class Upkeep(StrictModel):
    warranty_months: int = Field(ge=0, le=240)
    warranty_source: str
    maintenance_per_year: float = Field(ge=0, le=1, description="Share of capex a year.")
    maintenance_source: str
    insurance_per_year: float = Field(ge=0, le=1, description="Share of capex a year.")
    insurance_source: str
    staff_month: float = Field(ge=0, description="One engineer's monthly cost.")
    staff_source: str
    staff_per_site: float = Field(ge=0, description="Engineers per site with owned servers.")
    servers_per_staff: int = Field(ge=1, description="Owned servers one engineer looks after.")
    staff_basis: str


class FinanceTerms(StrictModel):
    """catalog/finance/terms.yaml: how a plan's purchases are paid and upkept."""

    currency: str = "CNY"
    discount: Discount
    payment_terms: dict[str, PaymentTerms]
    default_channel: str
    financing: dict[str, Financing] = Field(default_factory=dict)
    upkeep: Upkeep


class FinancedServers(OutModel):
    """Servers of one model at one site the plan chose to finance, and why
    (finance.financing: optimise)."""

    server: str
    site: str
    count: int
    offer: str = Field(description="The financing's name in catalog/finance/terms.yaml.")
    annual_rate: float
    term_months: int
    down_payment: float = Field(description="Share of the price paid at delivery.")
    buy_out: float = Field(description="Share of the price paid with the last instalment.")
    unit_price: float = Field(description="One server's price, as bought in cash.")
    down_per_server: float
    monthly_per_server: float = Field(description="The annuity, each month of the term.")
    buy_out_per_server: float
    paid_per_server: float = Field(description="down + term x monthly + buy-out.")
    interest: float = Field(description="count x (paid - price): the TCO's financing line.")
    why: str = Field(description="The budget that binds, or the present value that wins.")
    source: str = Field(default="", description="The terms' source in the terms file.")


class CashMonth(OutModel):
    """What leaves the bank in one month (1 = the month of order)."""

    month: int
    purchases: float = Field(description="Deposits at order and balances at delivery.")
    financing: float = Field(description="Down payments, lease or instalment payments, buy-outs.")
    running: float = Field(description="Rack rent, bandwidth, energy, cloud, set-up fees.")
    upkeep: float = Field(description="Maintenance after the warranty, staff, insurance.")
    total: float


class FinancedLine(OutModel):
    """How one purchase line is paid."""

    item: str
    site: str | None
    price: float = Field(description="The line's amount in the TCO.")
    how: str = Field(description="cash, or the financing's name.")
    delivery_month: int
    paid: float = Field(description="What the line costs in cash, interest included.")
    npv: float = Field(description="Its payments at present value.")
    detail: str


class Cash(OutModel):
    """The plan's money as finance sees it: paid when it is paid, upkeep beside it, and
    the present value at a stated discount rate."""

    months: list[CashMonth]
    tco: float = Field(description="The plan's TCO (paid over the horizon, credits apart).")
    interest: float = Field(
        description="What financing adds to the purchases' price, beyond the TCO's financing lines."
    )
    upkeep: float = Field(description="Maintenance, staff and insurance: not in the TCO.")
    nominal: float = Field(
        description="tco + interest + upkeep: every month's total summed (interest beyond "
        "what the TCO counts of it)."
    )
    npv: float = Field(description="The months' totals at present value (month 1 undiscounted).")
    discount_rate: float
    discount_basis: str
    financed: list[FinancedLine] = Field(default_factory=list)
    upkeep_basis: list[str] = Field(default_factory=list)
    basis: str = ""


class HistogramBin(OutModel):
    low: float
    high: float
    draws: int


class RiskPlan(OutModel):
    """One plan the re-planned draws chose, and how often it was the cheapest."""

    plan: str = Field(description="What it buys, places and rents, in words.")
    share: float = Field(description="Share of the draws in which it was the cheapest plan.")
    draws: int
    mean_tco: float = Field(description="Its mean TCO over the draws it won.")


class Risk(OutModel):
    """`plan --risk N`: the chosen plan's TCO over N draws of prices, card efficiency and
    demand."""

    draws: int
    seed: int
    distributions: list[str] = Field(description="What was drawn, from what, how.")
    held: str = Field(description="What was not drawn, and why.")
    p10: float
    p50: float
    p90: float
    mean: float
    histogram: list[HistogramBin]
    deadline_missed: float = Field(
        description="Share of the draws in which a training run of the plan, slower by its "
        "card's efficiency draw, misses its deadline."
    )
    shortfall: float = Field(
        default=0.0,
        description="Share of the draws in which the plan cannot meet a drawn demand: a "
        "service's drawn tokens/s (or users) above what it delivers at its card's drawn "
        "efficiency, or a training workload's drawn runs needing more hours than its slot holds "
        "over the horizon. A probability, not priced: the plan meets every demand as a "
        "constraint and has no price for demand left unmet (--replan prices it: each draw is "
        "planned again to meet its demand).",
    )
    shortfall_by_workload: dict[str, float] = Field(
        default_factory=dict,
        description="Per workload with a drawn demand, the share of draws it falls short in.",
    )
    replanned: list[RiskPlan] = Field(
        default_factory=list, description="--replan: the plans the draws chose, most often first."
    )
    ran_on: str = Field(default="", description="--replan: the local pool or a Ray cluster.")
