"""The purchase memo: the one screen a finance lead reads before signing, from a Plan.

What to buy (model, count, unit price, total), where (site, racks, kW), what to rent,
capex, the monthly bill, the TCO over the horizon (what is paid: credits such as the
servers' residual value stand apart), the payback against the cheapest all-rental plan
(`Plan.payback`, solved by `analyses/payback.py`), and the three facts that would change
the decision: the narrowest sensitivity ranges when they were computed, else the binding
constraints, the margin over renting instead, the soft rules the plan pays for and the
largest cost lines. Every figure is the plan's own (the HTML and
Markdown reports print them; the browser test compares them with the JSON).

Also the payment schedule by period: months for a horizon of a year or less, else
quarters, with the cumulative spend of the plan and of the all-rental plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpusolve.explain.bom import ITEM_SECTIONS, price_location, section_of
from gpusolve.explain.payments import is_credit, rented_by, spend
from gpusolve.models.money import Cash
from gpusolve.models.plan import Cost, CostItem, Payback, Plan, SensitivityRange, Site
from gpusolve.render.about import named
from gpusolve.render.fmt import hardware
from gpusolve.render.sensitivity import number

# Cost kinds bought as equipment, in the memo's order; servers are listed model by model.
EQUIPMENT = {"servers_capex": "server", "network": "network", "storage": "storage"}
CREDIT_LABELS = {
    "residual_value": "residual value of the servers at the horizon",
    "resale": "owned servers sold now",
    "horizon_resale": "the servers bought, sold at the horizon",
}


@dataclass(frozen=True)
class Purchase:
    kind: str  # server, network, storage
    item: str
    site: str | None
    count: float | None
    unit: str
    unit_price: float | None
    amount: float
    illustrative: bool = False  # the price is the catalogue's estimate, not a quote


@dataclass(frozen=True)
class Kit:
    """Network or storage bought, summed for the memo: what, by unit ('2 x switch,
    18 x link'), where, and the total; the cost table lists it line by line."""

    kind: str
    summary: str
    sites: str
    amount: float
    illustrative: bool = False  # any of its prices is an estimate


def kits(buys: list[Purchase]) -> list[Kit]:
    out = []
    for kind in ("network", "storage"):
        parts = [b for b in buys if b.kind == kind]
        if not parts:
            continue
        units: dict[str, float] = {}
        for b in parts:
            units[b.unit or b.item] = units.get(b.unit or b.item, 0.0) + (b.count or 1)
        summary = ", ".join(f"{n:g} x {unit}" for unit, n in units.items())
        sites = ", ".join(dict.fromkeys(b.site for b in parts if b.site)) or "-"
        estimated = any(b.illustrative for b in parts)
        out.append(Kit(kind, summary, sites, sum(b.amount for b in parts), estimated))
    return out


@dataclass(frozen=True)
class Rental:
    workload: str
    what: str
    amount: float
    illustrative: bool = False
    offer: str | None = None  # the cloud offer's catalogue id
    instances: int = 0


@dataclass(frozen=True)
class Credit:
    label: str
    amount: float  # <= 0


@dataclass(frozen=True)
class Memo:
    currency: str
    horizon_months: int
    buys: list[Purchase]  # servers, then network and storage line by line
    kits: list[Kit]  # network and storage, summed
    kept: list[str]  # servers already owned (an inventory) the plan uses or sells
    sites: list[Site]
    rents: list[Rental]
    capex: float
    monthly_opex: float
    opex: float  # over the horizon: capex + opex is the TCO, to the yuan
    tco: float  # what is paid over the horizon, credits apart
    credits: list[Credit]
    net: float  # tco plus the credits
    payback: str
    payback_month: int | None
    rental_tco: float | None
    facts: list[str]
    facts_from: str
    # Of the TCO paid, what rests on prices the catalogue marks illustrative (estimates).
    estimated: float = 0.0
    estimated_sites: tuple[str, ...] = ()  # sites whose rack, power or bandwidth price is one

    @property
    def estimated_share(self) -> float:
        return self.estimated / self.tco if self.tco else 0.0


def credits(cost: Cost) -> list[Credit]:
    """The credits: the credit lines (residual value), or the breakdown's figure when it
    has no lines, and the resale of owned servers (a figure apart from the TCO)."""
    lines = [i for i in cost.breakdown.items if is_credit(i)]
    totals: dict[str, float] = {}
    for i in lines:
        totals[i.kind] = totals.get(i.kind, 0.0) + i.amount
    residual = float(getattr(cost.breakdown, "residual_value", 0))  # older plan models
    if not lines and residual:
        totals["residual_value"] = residual
    end = cost.horizon_resale  # off by default
    if end is not None and end.amount:
        totals["horizon_resale"] = -end.amount
    if cost.resale:
        totals["resale"] = -cost.resale
    return [Credit(CREDIT_LABELS.get(k, k.replace("_", " ")), a) for k, a in totals.items()]


def kept(plan: Plan) -> list[str]:
    """The servers already owned, as the memo names them: how many the plan keeps in
    service, sells and leaves idle (sunk: never in the capex or the TCO)."""
    if plan.inventory is None:
        return []
    out = []
    for s in plan.inventory.servers:
        fates = [(s.in_service, "in service"), (s.sold, "sold"), (s.idle, "idle")]
        said = ", ".join(f"{n} {what}" for n, what in fates if n)
        out.append(f"{s.owned} x {s.server} at {s.site}: {said or 'none used'}")
    return out


def purchases(cost: Cost) -> list[Purchase]:
    """Equipment bought: each server model at each site, then network and storage lines."""
    out = []
    for kind, name in EQUIPMENT.items():
        for i in cost.breakdown.items:
            if i.kind == kind and i.amount:
                out.append(
                    Purchase(
                        name,
                        i.subject,
                        i.site,
                        i.quantity,
                        i.unit,
                        i.unit_price,
                        i.amount,
                        i.illustrative,
                    )
                )
    return out


def rentals(plan: Plan) -> list[Rental]:
    assert plan.cost is not None
    rented = [i for i in plan.cost.breakdown.items if i.kind == "cloud_rental"]
    out = []
    for d in plan.deployments:
        if d.mode != "cloud":
            continue
        mine = [i for i in rented if rented_by(i, [d]) is d]
        amount = sum(i.amount for i in mine)
        estimated = any(i.illustrative for i in mine)
        out.append(Rental(d.workload, hardware(d), amount, estimated, d.cloud_offer, d.servers))
    return out


def estimated_spend(cost: Cost) -> float:
    """What the plan pays on prices the catalogue marks illustrative: the cash lines whose
    price is an estimate, not a quote (credits apart, as from the TCO)."""
    return sum(i.amount for i in cost.breakdown.items if i.illustrative and not is_credit(i))


def estimated_sites(cost: Cost) -> tuple[str, ...]:
    """Sites with a rack, energy or bandwidth price that is an estimate, in plan order."""
    found = (i.site for i in cost.breakdown.items if i.illustrative and i.site)
    return tuple(dict.fromkeys(s for s in found if s))


def estimate_headline(m: Memo) -> str:
    """One line on how much of the TCO rests on estimates, and how to replace them."""
    if not m.estimated:
        return "No price in this plan is marked illustrative: every one is a quote."
    return (
        f"{m.estimated_share:.0%} of the TCO ({m.estimated:,.0f} {m.currency}) rests on "
        "illustrative prices (marked *), estimates, not quotes: put your quotes in a catalogue "
        "file and plan again with --catalog quotes.yaml."
    )


def memo(plan: Plan, names: Mapping[str, str] | None = None) -> Memo | None:
    """The memo of a plan with a cost (None without one). With `names` (catalogue id ->
    product name), its sentences name products: what would change the decision, the
    payback, the servers already owned."""
    cost = plan.cost
    if cost is None:
        return None
    found = credits(cost)
    pb = plan.payback
    facts, source = deciding_facts(plan)
    names = names or {}
    return Memo(
        currency=cost.currency,
        horizon_months=cost.horizon_months,
        buys=purchases(cost),
        kits=kits(purchases(cost)),
        kept=[named(k, names) for k in kept(plan)],
        sites=plan.sites,
        rents=rentals(plan),
        capex=cost.capex,
        monthly_opex=cost.monthly_opex,
        opex=spend(cost) - cost.capex,
        tco=spend(cost),
        credits=found,
        net=spend(cost) + sum(c.amount for c in found),
        payback=named(pb.summary, names) if pb is not None else "not computed",
        payback_month=pb.payback_month if pb is not None else None,
        rental_tco=pb.rental_tco if pb is not None else None,
        facts=[named(f, names) for f in facts],
        facts_from=source,
        estimated=estimated_spend(cost),
        estimated_sites=estimated_sites(cost),
    )


# ------------------------------------------------------------------ what would change it


def narrowest(ranges: list[SensitivityRange]) -> list[SensitivityRange]:
    """The ranges whose nearer switching end is closest to the current value, first."""
    return sorted(ranges, key=lambda r: (_nearest(r)[0], r.parameter))


def _nearest(r: SensitivityRange) -> tuple[float, str]:
    """How far (as a share of the current value) the nearer end that switches the plan
    lies, and which end ("low" or "high"); ends where the search ran out count as far."""
    ends = []
    if r.low is not None and r.current:
        ends.append((abs(1 - r.low / r.current), "low"))
    if r.high is not None and r.current:
        ends.append((abs(r.high / r.current - 1), "high"))
    return min(ends) if ends else (float("inf"), "")


def range_fact(r: SensitivityRange, currency: str) -> str:
    share, end = _nearest(r)
    if not end:
        return f"{r.parameter}: the plan holds over the whole range searched"
    value, switch, tco = (
        (r.low, r.below, r.below_tco) if end == "low" else (r.high, r.above, r.above_tco)
    )
    move = "lower" if end == "low" else "higher"
    then = f" to: {switch}" if switch else ""
    cost = f" (TCO {tco:,.0f} {currency})" if tco is not None else ""
    assert value is not None  # the nearer end is one that switches
    return (
        f"{r.parameter} {share:.0%} {move} ({number(value)} {r.unit}, now {number(r.current)}) "
        f"changes the plan{then}{cost}"
    )


def deciding_facts(plan: Plan, count: int = 3) -> tuple[list[str], str]:
    """Up to `count` facts that would change the decision, and where they come from: the
    narrowest sensitivity ranges when computed; else the binding constraints, the margin
    over renting instead, the soft rules the plan pays for, the largest cost lines."""
    assert plan.cost is not None
    currency = plan.cost.currency
    held = margin_facts(plan)[:count]
    if plan.sensitivity is not None and plan.sensitivity.ranges:
        other = rental_margin(plan)[:1]  # the other way of paying: renting or buying
        ranges = narrowest(plan.sensitivity.ranges)[: max(0, count - len(other) - len(held))]
        said = (
            "the narrowest sensitivity ranges"
            + (", the margins" if held else "")
            + (", the comparison with the other way of paying" if other else "")
        )
        return held + [range_fact(r, currency) for r in ranges] + other, said
    found: list[tuple[str, list[str]]] = [
        ("the margins", held),
        ("binding constraints", [f"{b.detail} (binding)" for b in plan.binding]),
        ("the comparison with the other way of paying", rental_margin(plan)),
        ("soft rules", penalty_facts(plan)),
        ("the largest cost lines", largest_lines(plan.cost, count)),
    ]
    facts: list[str] = []
    sources: list[str] = []
    for source, lines in found:
        taken = lines[: count - len(facts)]
        if taken:
            facts += taken
            sources.append(source)
    return facts, ", ".join(sources) + (
        " (no ranges: the HTML and Markdown memo compute them unless --no-sensitivity; "
        "plan --sensitivity searches every card too)"
    )


def margin_facts(plan: Plan) -> list[str]:
    """A rental the margin alone keeps out that costs less than the plan: the margin, not
    the prices, decides the plan there (one per workload, the nearest to its margin)."""
    assert plan.cost is not None
    cur, tco = plan.cost.currency, spend(plan.cost)
    out: list[str] = []
    seen: set[str] = set()
    for m in plan.margin_misses:
        if m.rental_cost is None or m.rental_cost >= tco or m.workload in seen:
            continue
        seen.add(m.workload)
        let_in = m.margin_to_let_in()
        out.append(
            f"the {m.margin:.0%} margin on {m.workload} decides the plan: renting {m.servers} "
            f"x {m.candidate} ({m.rental_cost:,.0f} {cur} over the horizon) meets its "
            f"{m.deadline_hours:,.0f} h deadline as written with {m.spare:.1%} spare; "
            f"`margin: {let_in:g}` lets the plan weigh it"
        )
    return out


def rental_margin(plan: Plan) -> list[str]:
    """How far renting is from the plan: the cut in the alternative's cloud prices that
    would make it the cheaper choice, or the resale value buying depends on."""
    pb, cost = plan.payback, plan.cost
    if pb is not None and cost is not None and cost.capex <= 0:
        return buying_margin(pb, spend(cost), cost.currency)
    if pb is None or pb.rental_tco is None or pb.saving is None or cost is None:
        return []
    cur = cost.currency
    credit = -sum(c.amount for c in credits(cost))  # >= 0: the book value counted
    if pb.saving > 0:
        dearer = f"renting instead of buying costs {pb.saving:,.0f} {cur} more over the horizon"
        cut = pb.saving / pb.rental_cloud if pb.rental_cloud else 1.0
        if cut < 1:
            return [f"{dearer}: cloud prices {cut:.0%} lower would make renting the cheaper plan"]
        return [f"{dearer}, and would even at no cloud price: buying is the cheaper plan"]
    if credit > -pb.saving:
        return [
            f"renting instead of buying costs {-pb.saving:,.0f} {cur} less in cash; buying "
            f"wins only by the servers' resale value ({credit:,.0f} {cur}, not cash): a "
            f"resale below {-pb.saving:,.0f} {cur} makes renting the cheaper plan"
        ]
    if round(pb.saving) == 0:
        return [
            "renting instead costs the same over the horizon: the cheapest all-rental plan "
            "ties with this one"
        ]
    return [
        f"renting instead would cost {-pb.saving:,.0f} {cur} less over the horizon, credits "
        "counted: the plan buys for its objective or soft rules, not for the money"
    ]


def buying_margin(pb: Payback, tco: float, cur: str) -> list[str]:
    """A plan that buys nothing against the cheapest plan that rents nothing: what buying
    would cost, and the cut in its capex that would make it the cheaper plan."""
    if pb.buying_tco is None:
        return [f"buying instead is not an option: {pb.buying_note}"] if pb.buying_note else []
    what = "; ".join(pb.buying_hardware)
    if pb.buying_note:  # it breaks a budget: that is why it loses
        return [
            f"buying instead ({what}) would cost {pb.buying_tco:,.0f} {cur} over the "
            f"horizon with capex {pb.buying_capex or 0:,.0f} {cur}, but {pb.buying_note}"
        ]
    dearer = pb.buying_tco - tco
    if dearer <= 0:
        return [
            f"buying instead ({what}) would cost {pb.buying_tco:,.0f} {cur}, "
            f"{-dearer:,.0f} {cur} less: the plan rents for its soft rules or budgets"
        ]
    capex = pb.buying_capex or 0.0
    cut = dearer / capex if capex else 1.0
    flip = (
        f"hardware prices {cut:.0%} lower would make buying the cheaper plan"
        if cut < 1
        else "it would lose even with free hardware: its running costs alone exceed renting"
    )
    return [
        f"buying instead ({what}) would cost {pb.buying_tco:,.0f} {cur} over the horizon, "
        f"{dearer:,.0f} {cur} more than renting (its capex {capex:,.0f}): {flip}"
    ]


def penalty_facts(plan: Plan) -> list[str]:
    """Soft-rule penalties the chosen plan carries: the plan holds although a rule
    counts against it (a larger penalty, or a cheaper alternative, would switch it)."""
    assert plan.cost is not None
    cur = plan.cost.currency
    return [
        f"rule {p.rule}{f' ({p.source})' if p.source else ''} counts {p.amount:,.0f} {cur} "
        f"against {p.workload} on {p.deployment} and the plan keeps it: {p.reason}"
        for p in plan.cost.breakdown.penalty_items
    ]


def largest_lines(cost: Cost, count: int) -> list[str]:
    spent = spend(cost) or 1.0
    lines = sorted(
        (i for i in cost.breakdown.items if i.amount > 0), key=lambda i: (-i.amount, i.subject)
    )
    return [
        f"{i.subject} ({i.kind.replace('_', ' ')}) is {i.amount / spent:.0%} of the TCO: "
        "a price to confirm first (how far it may move is not computed here)"
        for i in lines[:count]
    ]


# ------------------------------------------------------------------ the payment schedule


@dataclass(frozen=True)
class Period:
    label: str  # "month 1", "Q1 (months 1-3)"
    capex: float
    rent: float
    energy: float
    cloud: float
    other: float
    total: float
    cumulative: float
    rental_cumulative: float | None  # the all-rental plan's, when there is one


def period_months(horizon_months: int) -> int:
    """Months a period spans: one up to a year, else a quarter."""
    return 1 if horizon_months <= 12 else 3


def periods(plan: Plan) -> list[Period]:
    """The plan's payments grouped by period, with both cumulative spends."""
    step = period_months(len(plan.payments))
    rental = plan.payback.rental_months if plan.payback is not None else []
    out: list[Period] = []
    total = rental_total = 0.0
    for start in range(0, len(plan.payments), step):
        months = plan.payments[start : start + step]
        sums = {
            k: sum(getattr(m, k) for m in months)
            for k in ("capex", "rent", "energy", "cloud", "other", "total")
        }
        total += sums["total"]
        rental_total += sum(rental[start : start + step])
        first, last = months[0].month, months[-1].month
        label = (
            f"month {first}"
            if step == 1
            else f"Q{start // 3 + 1} (months {first}-{last})"
            if first != last
            else f"Q{start // 3 + 1} (month {first})"
        )
        out.append(
            Period(
                label=label,
                **sums,
                cumulative=total,
                rental_cumulative=rental_total if rental else None,
            )
        )
    return out


def located_source(plan: Plan, item: CostItem) -> str:
    """A cost line's price source with the catalogue file:line it is defined at (the item
    for equipment and rentals, the colo offer for a site's charges), as the BOM has it."""
    key = item.subject if section_of(item.kind) in ITEM_SECTIONS else item.site
    ref = next((r for r in plan.sources if r.id == key), None)
    at = price_location(ref) if ref is not None else None
    if not at or at in item.source:
        return item.source
    return f"{item.source}; {at}" if item.source else at


@dataclass(frozen=True)
class CashPeriod:
    label: str
    purchases: float
    financing: float
    running: float
    upkeep: float
    total: float
    cumulative: float


def cash_periods(cash: Cash | None) -> list[CashPeriod]:
    """The cash view grouped as the payment schedule is: months up to a year, else quarters."""
    if cash is None:
        return []
    months = cash.months
    step = period_months(len(months))
    out: list[CashPeriod] = []
    total = 0.0
    for start in range(0, len(months), step):
        part = months[start : start + step]
        sums = {
            k: sum(getattr(m, k) for m in part)
            for k in ("purchases", "financing", "running", "upkeep", "total")
        }
        total += sums["total"]
        first, last = part[0].month, part[-1].month
        label = f"month {first}" if first == last else f"Q{start // 3 + 1} (months {first}-{last})"
        out.append(CashPeriod(label=label, **sums, cumulative=total))
    return out
