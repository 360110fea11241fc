"""The plan's money as finance sees it: each payment in the month it leaves the bank, the
upkeep of what is owned beside it, and the present value at a stated discount rate.

A view over the solved plan: this module changes no decision. Servers the plan itself
chose to finance (`Plan.financed`, finance.financing: optimise) are paid as it financed
them, per server as the TCO's financing lines count them; every other purchase as asked.
Month 1 is the month of order; the terms come from catalog/finance/terms.yaml
(each figure sourced or labelled an estimate there):
- a purchase (servers, network, storage) on payment terms: the deposit at order, the
  balance in the month of delivery (week w of the server's lead time ends on day 7w, in
  month 1 + floor(7w / 30.4375)); network and storage arrive with the site's servers;
- or financed: a down payment at delivery, then equal monthly payments in arrears over the
  term, the annuity P = (A - B / (1+i)^n) x i / (1 - (1+i)^-n) on the amount A financed,
  i the monthly rate, B the buy-out paid with the last payment;
- rack rent, bandwidth, energy and cloud as the payment schedule lays them out
  (explain/payments.py: monthly, set-up fees at month 1); credits are not cash;
- upkeep, not in the TCO: maintenance after the warranty and insurance as shares of each
  purchase a year, monthly from delivery; operations staff as a share of an engineer per
  site plus one per N servers (fractions of a person: staff are shared across sites);
- NPV: month m's total discounted by (1 + r)^((m - 1) / 12), so month 1 is undiscounted
  and at r = 0 the NPV is the nominal sum.
Amounts are whole units; each line's months add up to the line exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpusolve.explain.payments import PURCHASE_KINDS, is_credit, line_months, spend
from gpusolve.models.money import (
    Cash,
    CashMonth,
    FinancedLine,
    FinanceTerms,
    Financing,
    Upkeep,
    to_money,
)
from gpusolve.models.plan import CostItem, Plan
from gpusolve.models.schedule import Schedule
from gpusolve.optimize.financing import annuity_payment

DAYS_PER_MONTH = 365.25 / 12


def delivery_month(lead_time_weeks: float) -> int:
    """The month (1 = order) goods with this lead time arrive in."""
    return 1 + int(max(lead_time_weeks, 0.0) * 7 // DAYS_PER_MONTH)


def on_terms(price: float, deposit: float, delivery: int, order: int = 1) -> dict[int, float]:
    """A purchase paid `deposit` (a share) in the month of order and the rest at delivery."""
    first = float(to_money(price * deposit))
    paid = {order: first}
    paid[delivery] = paid.get(delivery, 0.0) + (price - first)
    return paid


def financed(price: float, terms: Financing, delivery: int) -> dict[int, float]:
    """A purchase financed: the down payment at delivery, the annuity in each of the term's
    months after it (whole units), the buy-out with the last payment."""
    down = float(to_money(price * terms.down_payment))
    balloon = float(to_money(price * terms.buy_out))
    each = float(
        to_money(annuity_payment(price - down, terms.annual_rate, terms.term_months, balloon))
    )
    paid = {delivery: down}
    for k in range(1, terms.term_months + 1):
        paid[delivery + k] = each
    paid[delivery + terms.term_months] += balloon
    return paid


def npv(flows: Sequence[float], annual_rate: float) -> float:
    """Month-by-month flows (index 0 = month 1) at present value."""
    factor = 1.0 / (1.0 + annual_rate)
    return float(sum(cf * factor ** (m / 12.0) for m, cf in enumerate(flows)))


def _as_list(paid: Mapping[int, float], months: int) -> list[float]:
    out = [0.0] * months
    for month, amount in paid.items():
        out[month - 1] += amount
    return out


@dataclass(frozen=True)
class Choice:
    how: str
    paid: dict[int, float]
    detail: str
    price: float = 0.0  # the part of its line's price paid this way (0: the whole line)


def cash_how(how: str) -> str:
    """How the purchases the plan did not finance are paid: with `optimise` the plan chose
    which to finance, the rest in cash."""
    return "cash" if how == "optimise" else how


def planned_picks(
    plan: Plan, bought: Sequence[tuple[CostItem, int]], terms: FinanceTerms
) -> list[tuple[CostItem, int, Choice]]:
    """The servers the plan itself financed (`plan.financed`), each paid per server on the
    offer's terms, as the TCO's financing lines count them."""
    left = {(f.server, f.site, f.offer): f.count for f in plan.financed}
    out = []
    for item, d in bought:
        if item.kind != "servers_capex" or not item.quantity:
            continue
        room = int(item.quantity)
        for f in plan.financed:
            key = (f.server, f.site, f.offer)
            n = min(left[key], room)
            if f.server != item.subject or f.site != item.site or n <= 0:
                continue
            left[key] -= n
            room -= n
            stated = terms.financing.get(f.offer)
            offer = Financing(
                annual_rate=f.annual_rate,
                term_months=f.term_months,
                down_payment=f.down_payment,
                buy_out=f.buy_out,
                source=stated.source if stated is not None else "",
            )
            each = financed(f.unit_price, offer, d)
            detail = (
                f"{n} financed by the plan, {f.offer}: {f.down_payment:.0%} down at delivery "
                f"(month {d}), {f.term_months} monthly payments at {f.annual_rate:.1%} a year, "
                f"buy-out {f.buy_out:.0%}"
            )
            paid = {m: n * v for m, v in each.items()}
            out.append((item, d, Choice(f.offer, paid, detail, n * f.unit_price)))
    return out


def payment_choices(
    price: float,
    delivery: int,
    deposit: float,
    channel: str,
    terms: FinanceTerms,
    order: int = 1,
) -> list[Choice]:
    """Every way a purchase may be paid: cash on the channel's terms, then each financing."""
    out = [
        Choice(
            "cash",
            on_terms(price, deposit, delivery, order),
            f"{channel}: {deposit:.0%} at order, the rest at delivery in month {delivery}",
        )
    ]
    for name, f in sorted(terms.financing.items()):
        out.append(
            Choice(
                name,
                financed(price, f, delivery),
                f"{name}: {f.down_payment:.0%} down at delivery (month {delivery}), "
                f"{f.term_months} monthly payments at {f.annual_rate:.1%} a year, "
                f"buy-out {f.buy_out:.0%}",
            )
        )
    return out


def chosen(choices: Sequence[Choice], how: str, rate: float) -> Choice:
    """The choice asked for, or with "cheapest" the least at present value (cash on a tie)."""
    if how != "cheapest":
        return next(c for c in choices if c.how == how)
    months = max(m for c in choices for m in c.paid)
    return min(choices, key=lambda c: round(npv(_as_list(c.paid, months), rate), 6))


def deliveries(plan: Plan, lead_weeks: Mapping[str, float]) -> dict[str | None, int]:
    """Per site, the month its servers arrive (the latest of them); network and storage
    arrive with them."""
    out: dict[str | None, int] = {}
    assert plan.cost is not None
    for item in plan.cost.breakdown.items:
        if item.kind == "servers_capex":
            month = delivery_month(lead_weeks.get(item.subject, 0.0))
            out[item.site] = max(out.get(item.site, 1), month)
    return out


def upkeep_months(
    plan: Plan, purchases: Sequence[tuple[CostItem, int]], terms: FinanceTerms, months: int
) -> tuple[list[float], list[str]]:
    """Maintenance after the warranty and insurance of each purchase, and operations staff
    for the servers at the plan's sites, month by month over the horizon; and each part's
    total in words."""
    assert plan.cost is not None
    up = terms.upkeep
    horizon = plan.cost.horizon_months
    maintenance, insurance, staff = [0.0] * months, [0.0] * months, [0.0] * months
    for item, delivery in purchases:
        for m in range(delivery, horizon + 1):
            insurance[m - 1] += item.amount * up.insurance_per_year / 12
            if m >= delivery + up.warranty_months:
                maintenance[m - 1] += item.amount * up.maintenance_per_year / 12
    servers = sum(sum(s.servers.values()) for s in plan.sites)
    if servers:
        people = up.staff_per_site * len(plan.sites) + servers / up.servers_per_staff
        for m in range(horizon):
            staff[m] = people * up.staff_month
    return _upkeep_total(up, maintenance, insurance, staff)


def _upkeep_total(
    up: Upkeep, maintenance: list[float], insurance: list[float], staff: list[float]
) -> tuple[list[float], list[str]]:
    """The month-by-month upkeep total and one line per kind that costs something."""
    parts = [
        ("maintenance after the warranty", maintenance, up.maintenance_source),
        ("insurance", insurance, up.insurance_source),
        ("operations staff", staff, up.staff_basis),
    ]
    together = zip(maintenance, insurance, staff, strict=True)
    total = [float(to_money(a + b + c)) for a, b, c in together]
    words = [f"{name}: {sum(v):,.0f} ({src})" for name, v, src in parts if sum(v)]
    return total, words


def cash_view(
    plan: Plan,
    terms: FinanceTerms,
    lead_weeks: Mapping[str, float],
    runs: Mapping[str, float],
    paid_months: Mapping[str, int] | None = None,
    how: str = "cash",
    channel: str | None = None,
    discount_rate: float | None = None,
) -> Cash | None:
    """The plan's cash by month, its upkeep and its NPV (None without a cost)."""
    cost = plan.cost
    if cost is None:
        return None
    rate = terms.discount.annual_rate if discount_rate is None else discount_rate
    basis = terms.discount.source if discount_rate is None else "the requirements' discount_rate"
    channel = channel or terms.default_channel
    deposit = terms.payment_terms[channel].deposit_at_order
    arrive = deliveries(plan, lead_weeks)
    bought = [
        (i, arrive.get(i.site, 1) if i.kind != "servers_capex" else arrive_of(i, lead_weeks))
        for i in cost.breakdown.items
        if i.kind in PURCHASE_KINDS and i.amount and not is_credit(i)
    ]
    picks = planned_picks(plan, bought, terms)
    for i, d in bought:
        price = i.amount - sum(c.price for item, _, c in picks if item is i)
        if price:
            c = chosen(payment_choices(price, d, deposit, channel, terms), cash_how(how), rate)
            picks.append((i, d, c))
    last = max([m for *_, c in picks for m in c.paid], default=1)
    months = max(cost.horizon_months, last)
    running = [0.0] * months
    for item in cost.breakdown.items:
        if is_credit(item) or not item.amount or (item.kind in PURCHASE_KINDS):
            continue
        if item.kind == "financing":  # inside the financed servers' payments below
            continue
        spread = line_months(item, cost.horizon_months, plan.deployments, runs, paid_months)
        for m, amount in enumerate(spread):
            running[m] += amount
    purchases, financing = [0.0] * months, [0.0] * months
    lines = []
    for item, d, c in picks:
        flows = _as_list(c.paid, months)
        target = purchases if c.how == "cash" else financing
        for m, amount in enumerate(flows):
            target[m] += amount
        lines.append(
            FinancedLine(
                item=item.subject,
                site=item.site,
                price=c.price or item.amount,
                how=c.how,
                delivery_month=d,
                paid=sum(flows),
                npv=round(npv(flows, rate), 2),
                detail=c.detail,
            )
        )
    upkeep, words = upkeep_months(plan, bought, terms, months)
    rows = [
        CashMonth(
            month=m + 1,
            purchases=purchases[m],
            financing=financing[m],
            running=running[m],
            upkeep=upkeep[m],
            total=purchases[m] + financing[m] + running[m] + upkeep[m],
        )
        for m in range(months)
    ]
    in_tco = sum(i.amount for i in cost.breakdown.items if i.kind == "financing")
    return _cash(rows, spend(cost), lines, upkeep, words, (rate, basis), BASIS, in_tco)


def _cash(
    rows: list[CashMonth],
    tco: float,
    lines: list[FinancedLine],
    upkeep: Sequence[float],
    words: list[str],
    discount: tuple[float, str],
    basis: str,
    interest_in_tco: float = 0.0,
) -> Cash:
    """The cash view from its months: totals, interest, upkeep and the present value.
    `interest_in_tco`: what the TCO already counts of it (servers the plan financed)."""
    rate, discount_basis = discount
    totals = [r.total for r in rows]
    return Cash(
        months=rows,
        tco=tco,
        interest=sum(ln.paid - ln.price for ln in lines) - interest_in_tco,
        upkeep=sum(upkeep),
        nominal=sum(totals),
        npv=round(npv(totals, rate), 2),
        discount_rate=rate,
        discount_basis=discount_basis,
        financed=lines,
        upkeep_basis=words,
        basis=basis,
    )


def arrive_of(item: CostItem, lead_weeks: Mapping[str, float]) -> int:
    return delivery_month(lead_weeks.get(item.subject, 0.0))


BASIS = (
    "month 1 is the month of order; purchases on payment terms (deposit at order, balance at "
    "delivery after the server's lead time) or financed (down payment at delivery, monthly "
    "annuity after it, buy-out at the end); rack rent, bandwidth and energy monthly, cloud by "
    "run; upkeep (maintenance after the warranty, insurance, staff) beside the TCO, not in "
    "it; terms from catalog/finance/terms.yaml"
)


# ------------------------------------------------------------------ a purchase schedule

# A rack line of a schedule's bill of materials: its contract's first month and length.
RACK_TERM = re.compile(r"contracted from month (\d+) x [\d,]+/month x (\d+) months")


def rack_months(note: str, amount: float, start: int, months: int) -> dict[int, float]:
    """A schedule's rack contract paid monthly over its term (from the month after it is
    contracted, month 0 being the first); a line without a stated term is spread over its
    period's months."""
    found = RACK_TERM.search(note)
    first, term = (int(found[1]), int(found[2])) if found else (start, months)
    return spread(amount, first + 1, term)


def spread(amount: float, first: int, months: int) -> dict[int, float]:
    """`amount` in equal whole units over `months` months from `first` (1-based); the
    remainder in the last."""
    each = float(to_money(amount / months))
    out = {first + k: each for k in range(months)}
    out[first + months - 1] += amount - each * months
    return out


def schedule_cash(
    s: Schedule,
    terms: FinanceTerms,
    lead_weeks: Mapping[str, float],
    how: str = "cash",
    channel: str | None = None,
    discount_rate: float | None = None,
) -> Cash:
    """A purchase schedule's cash by month: each period's purchases on payment terms (or
    financed) from the month it orders them, its rack contracts monthly over their term,
    its energy, site fees and rentals spread over its months; upkeep of the servers it
    buys and of those working; the NPV."""
    rate = terms.discount.annual_rate if discount_rate is None else discount_rate
    basis = terms.discount.source if discount_rate is None else "the requirements' discount_rate"
    channel = channel or terms.default_channel
    deposit = terms.payment_terms[channel].deposit_at_order
    running: dict[int, float] = {}
    purchases: dict[int, float] = {}
    financing: dict[int, float] = {}
    lines: list[FinancedLine] = []
    bought: list[tuple[CostItem, int]] = []
    for p in s.periods:
        order = p.start_month + 1
        arrive: dict[str, int] = {
            b.site: order - 1 + delivery_month(lead_weeks.get(b.server, 0.0)) for b in p.bought
        }
        for b in p.bom:
            if not b.amount or b.unit_price is None:
                continue
            if b.section == "rack":
                _add(running, rack_months(b.note, b.amount, p.start_month, p.months))
            elif b.section in ("site", "cloud"):
                _add(running, spread(b.amount, order, p.months))
            elif b.amount < 0:  # a fabric replaced: what it no longer costs, at order
                _add(purchases, {order: b.amount})
            else:
                if b.section == "server":
                    d = order - 1 + delivery_month(lead_weeks.get(b.item, 0.0))
                else:  # network and storage arrive with the period's servers there
                    d = arrive.get(b.site or "", order)
                choices = payment_choices(b.amount, d, deposit, channel, terms, order)
                c = chosen(choices, cash_how(how), rate)
                _add(purchases if c.how == "cash" else financing, c.paid)
                paid = sum(c.paid.values())
                item = CostItem(kind="servers_capex", subject=b.item, detail="", amount=b.amount)
                bought.append((item, d))
                lines.append(
                    FinancedLine(
                        item=b.item,
                        site=b.site,
                        price=b.amount,
                        how=c.how,
                        delivery_month=d,
                        paid=paid,
                        npv=round(npv(_as_list(c.paid, max(c.paid)), rate), 2),
                        detail=c.detail,
                    )
                )
    months = max([s.horizon_months, *purchases, *financing, *running])
    upkeep, words = schedule_upkeep(s, bought, terms, months)
    rows = []
    for m in range(1, months + 1):
        parts = (purchases.get(m, 0.0), financing.get(m, 0.0), running.get(m, 0.0))
        total = sum(parts) + upkeep[m - 1]
        rows.append(
            CashMonth(
                month=m,
                purchases=parts[0],
                financing=parts[1],
                running=parts[2],
                upkeep=upkeep[m - 1],
                total=total,
            )
        )
    tco = sum(float(b.amount) for p in s.periods for b in p.bom if b.unit_price is not None)
    return _cash(rows, tco, lines, upkeep, words, (rate, basis), SCHEDULE_BASIS)


def _add(into: dict[int, float], paid: Mapping[int, float]) -> None:
    for month, amount in paid.items():
        into[month] = into.get(month, 0.0) + amount


def schedule_upkeep(
    s: Schedule, bought: Sequence[tuple[CostItem, int]], terms: FinanceTerms, months: int
) -> tuple[list[float], list[str]]:
    """Maintenance after the warranty and insurance of each purchase from its delivery;
    staff for the servers working and the sites held, period by period."""
    up = terms.upkeep
    maintenance, insurance, staff = [0.0] * months, [0.0] * months, [0.0] * months
    for item, delivery in bought:
        for m in range(delivery, s.horizon_months + 1):
            insurance[m - 1] += item.amount * up.insurance_per_year / 12
            if m >= delivery + up.warranty_months:
                maintenance[m - 1] += item.amount * up.maintenance_per_year / 12
    for p in s.periods:
        servers = sum(w.servers for w in p.working)
        if not servers:
            continue
        sites = len({w.site for w in p.working})
        people = up.staff_per_site * sites + servers / up.servers_per_staff
        for m in range(p.start_month, min(p.start_month + p.months, months)):
            staff[m] = people * up.staff_month
    return _upkeep_total(up, maintenance, insurance, staff)


SCHEDULE_BASIS = (
    "month 1 is the first month of the schedule; each period's purchases ordered in its "
    "first month, on payment terms (deposit at order, balance at delivery after the "
    "server's lead time) or financed; rack contracts paid monthly over their term (not "
    "at signing); energy, site fees and rentals spread over their period's months; upkeep "
    "beside the TCO; terms from catalog/finance/terms.yaml"
)
