"""When the plan's money is paid: its cost lines laid out month by month over the horizon.

A finance team signs cash, not a horizon total. Each cost line is paid by what it buys:
- a purchase (servers, network, storage) and a one-off set-up fee: at purchase, month 1;
  a financed server (`Plan.financed`) pays its down payment then, and the rest of its
  price with the financing's interest in equal months over the term after it;
- rack rent, bandwidth and energy: the same amount every month of the horizon (energy of a
  workload that runs in bursts is spread too: it is a small share of any plan); the
  renewal of racks already contracted (an inventory) from the month after the months
  already paid;
- a cloud rental of a training workload: by run, the runs spaced evenly over the horizon
  (`runs` from the requirements), each run paid over the hours it runs from its start (a
  60-day pretraining rented once is paid in months 1 and 2, a monthly fine-tune monthly);
  a rental that serves (no time per run) every month;
- a credit (the servers' residual value): not cash, left out of the schedule: it stands
  apart from the TCO.

Amounts are whole units; each line's months add up to the line exactly (the rounding
remainder falls in its last month), so the schedule's total is the TCO before credits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpusolve.models.money import HOURS_PER_MONTH, FinancedServers
from gpusolve.models.plan import Cost, CostItem, Deployment, PaymentMonth, Plan

# Kinds bought once, at purchase. Kinds named by a later change are matched by prefix.
PURCHASE_KINDS = ("servers_capex", "network", "storage")
# Kinds that are not cash paid: credits, kept apart from the TCO and from the schedule.
CREDIT_KINDS = ("residual_value",)
# The schedule's columns: kind -> column; any other kind is "other".
COLUMNS = {
    "servers_capex": "capex",
    "network": "capex",
    "storage": "capex",
    "rack_rent": "rent",
    "bandwidth": "rent",
    "energy": "energy",
    "cloud_rental": "cloud",
}
COLUMN_NAMES = ("capex", "rent", "energy", "cloud", "other")
BASIS = (
    "purchases and set-up fees in month 1 (a financed server: its down payment, then the rest "
    "and the interest in equal months over the term); rack rent, bandwidth and energy every "
    "month (racks already contracted from the month after those paid); "
    "cloud rentals by run, the runs spaced evenly over the horizon (a service's rental every "
    "month); credits (residual value) apart: they are not cash"
)


def is_credit(item: CostItem) -> bool:
    return item.kind in CREDIT_KINDS or item.kind.startswith("residual")


def credit_total(cost: Cost) -> float:
    """The plan's credits on the servers it buys (<= 0): the credit lines, or the
    breakdown's residual value when the plan carries it without lines, and their resale
    at the horizon when the plan keeps it apart (`horizon_resale`)."""
    lines = [i.amount for i in cost.breakdown.items if is_credit(i)]
    end = cost.horizon_resale
    at_end = -end.amount if end is not None else 0.0
    residual = float(getattr(cost.breakdown, "residual_value", 0))  # older plan models
    return (sum(lines) if lines else residual) + at_end


def spend(cost: Cost) -> float:
    """The TCO before credits: what is paid over the horizon. Tolerant of a plan whose
    `tco` already leaves its credits out and of one that nets them in."""
    cash = [i.amount for i in cost.breakdown.items if not is_credit(i)]
    if cash and abs(sum(cash) - cost.tco) < 0.5:
        return cost.tco
    return cost.tco - credit_total(cost)


def line_months(
    item: CostItem,
    horizon_months: int,
    deployments: Sequence[Deployment],
    runs: Mapping[str, float],
    paid_months: Mapping[str, int] | None = None,
) -> list[float]:
    """What one cost line pays in each month of the horizon (index 0 = month 1).
    `paid_months`: per site with racks already contracted, the months already paid."""
    weights = _weights(item, horizon_months, deployments, runs, paid_months or {})
    return _whole(item.amount, weights)


def _weights(
    item: CostItem,
    horizon_months: int,
    deployments: Sequence[Deployment],
    runs: Mapping[str, float],
    paid_months: Mapping[str, int],
) -> list[float]:
    once = [1.0] + [0.0] * (horizon_months - 1)
    every = [1.0] * horizon_months
    if item.kind in PURCHASE_KINDS or item.unit == "set-up fee":
        return once
    paid = paid_months.get(item.site or "", 0)
    if item.kind == "rack_rent" and "contracted" in item.detail and 0 < paid < horizon_months:
        return [0.0] * paid + [1.0] * (horizon_months - paid)  # the contract's renewal
    if item.kind != "cloud_rental":
        return every
    d = rented_by(item, deployments)
    if d is None or d.time_to_train_h is None:
        return every
    n = runs.get(d.workload, 1.0)
    billed_by_month = item.unit.endswith("month")  # a monthly or reserved term: whole months
    return run_weights(horizon_months, n, d.time_to_train_h, billed_by_month)


def rented_by(item: CostItem, deployments: Sequence[Deployment]) -> Deployment | None:
    """The cloud deployment a rental line pays for: its offer and its workload (the line's
    detail opens with the workload's name)."""
    for d in deployments:
        ours = d.mode == "cloud" and d.cloud_offer == item.subject
        if ours and item.detail.startswith(f"{d.workload}:"):
            return d
    return None


def run_weights(
    horizon_months: int, runs: float, hours_per_run: float, whole_months: bool = False
) -> list[float]:
    """Hours run in each month: `runs` runs of `hours_per_run` hours, the i-th starting at
    i x horizon / runs (whole runs; a fraction of a run counts as one, started at 0). With
    `whole_months` (a term billed by the month) each month a run touches weighs the same."""
    horizon_h = horizon_months * HOURS_PER_MONTH
    count = max(round(runs), 1)
    weights = [0.0] * horizon_months
    for i in range(count):
        start = i * horizon_h / count
        end = min(start + max(hours_per_run, 1e-9), horizon_h)
        month = int(start // HOURS_PER_MONTH)
        while month < horizon_months and month * HOURS_PER_MONTH < end:
            lo = max(start, month * HOURS_PER_MONTH)
            hi = min(end, (month + 1) * HOURS_PER_MONTH)
            weights[month] += HOURS_PER_MONTH if whole_months else max(hi - lo, 0.0)
            month += 1
    return weights if sum(weights) > 0 else [1.0] + [0.0] * (horizon_months - 1)


def _whole(amount: float, weights: list[float]) -> list[float]:
    """`amount` split by `weights` in whole units; the remainder in the last paid month."""
    total = sum(weights)
    out = [float(round(amount * w / total)) for w in weights]
    last = max(i for i, w in enumerate(weights) if w > 0)
    out[last] += amount - sum(out)
    return out


def schedule(
    cost: Cost,
    deployments: Sequence[Deployment],
    runs: Mapping[str, float],
    paid_months: Mapping[str, int] | None = None,
    financed: Sequence[FinancedServers] = (),
) -> list[dict[str, float]]:
    """Per month of the horizon, the amount paid per column (capex, rent, energy, cloud,
    other); credits left out."""
    months = cost.horizon_months
    out = [dict.fromkeys(COLUMN_NAMES, 0.0) for _ in range(months)]
    for item in cost.breakdown.items:
        if is_credit(item) or not item.amount:
            continue
        column = COLUMNS.get(item.kind, "capex" if item.kind in PURCHASE_KINDS else "other")
        paid = _financed_months(item, financed, months)
        if paid is None:
            paid = line_months(item, months, deployments, runs, paid_months)
        for m, amount in enumerate(paid):
            out[m][column] += amount
    return out


def _financed_months(
    item: CostItem, financed: Sequence[FinancedServers], months: int
) -> list[float] | None:
    """A line of financed servers: their price less the down payments, and the financing
    line's interest, in equal months over the term after month 1 (a term past the horizon
    ends in its last month); None for any other line."""
    terms = [f for f in financed if (f.server, f.site) == (item.subject, item.site)]
    if not terms or item.kind not in ("servers_capex", "financing"):
        return None
    term = max(f.term_months for f in terms)
    over_term = [0.0] + [1.0 if m <= term else 0.0 for m in range(1, months)]
    if months == 1:
        return [item.amount]
    if item.kind == "financing":
        return _whole(item.amount, over_term)
    later = min(item.amount, sum(f.count * (f.unit_price - f.down_per_server) for f in terms))
    paid = _whole(later, over_term)
    paid[0] = item.amount - later
    return paid


def cumulative(monthly: Sequence[float]) -> list[float]:
    total, out = 0.0, []
    for amount in monthly:
        total += amount
        out.append(total)
    return out


def payback_month(plan_months: Sequence[float], rental_months: Sequence[float]) -> int | None:
    """The first month (1-based) from which the plan's cumulative spend stays at or below
    the all-rental plan's to the end of the horizon; None when it never does."""
    plan_cum, rent_cum = cumulative(plan_months), cumulative(rental_months)
    found: int | None = None
    for m, (p, r) in enumerate(zip(plan_cum, rent_cum, strict=True), start=1):
        below = p <= r + 0.5
        found = (found or m) if below else None
    return found


def payment_months(
    cost: Cost | None,
    deployments: Sequence[Deployment],
    runs: Mapping[str, float],
    paid_months: Mapping[str, int] | None = None,
    financed: Sequence[FinancedServers] = (),
) -> list[PaymentMonth]:
    """The schedule as the plan carries it (empty without a cost)."""
    if cost is None:
        return []
    laid_out = schedule(cost, deployments, runs, paid_months, financed)
    return [
        PaymentMonth(month=m, **paid, total=sum(paid.values()))
        for m, paid in enumerate(laid_out, start=1)
    ]


def contracted(plan: Plan) -> dict[str, int]:
    """Per site with racks already contracted (the plan's inventory), the months paid."""
    if plan.inventory is None:
        return {}
    return {r.site: r.months_paid for r in plan.inventory.racks}
