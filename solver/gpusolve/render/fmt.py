"""Number formatting shared by the text and markdown renderers."""

from __future__ import annotations

import math
import re

from gpusolve.models.plan import Cost, Deployment, SolverInfo


def money(value: float, currency: str) -> str:
    return f"{value:,.0f} {currency}"


def hours(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 48:
        return f"{value:,.0f} h ({value / 24:,.1f} d)"
    return f"{value:,.1f} h"


def extra_degrees(vp: int, cp: int, ep: int) -> list[str]:
    """The parallel degrees a layout shows only when they are used: 'VP2', 'CP4', 'EP32'."""
    return [f"{k}{v}" for k, v in (("VP", vp), ("CP", cp), ("EP", ep)) if v > 1]


def rack_use(fill_kw: float, rack_kw: float, reserved_kw: float) -> str:
    """'34.1 of 40 kW, 8 kW reserved': what a rack draws and what it keeps back."""
    used = f"{fill_kw:g} of {rack_kw:g} kW"
    return f"{used}, {reserved_kw:g} kW reserved" if reserved_kw > 0 else used


def layout(d: Deployment) -> str:
    p = d.parallel
    parts = [f"TP{p.tp}", f"PP{p.pp}", f"DP{p.dp}", *extra_degrees(p.vp, p.cp, p.ep)]
    if p.attention_dp:
        parts.append("attention-DP")
    if p.zero_stage:
        parts.append(f"ZeRO-{p.zero_stage}")
    if p.gradient_checkpointing != "none":
        parts.append(f"recompute:{p.gradient_checkpointing}")
    parts.append(f"mb{p.micro_batch}x{p.grad_accum}")
    if d.replicas > 1:
        parts.append(f"{d.replicas} replicas")
    return " ".join(parts)


def hardware(d: Deployment) -> str:
    if d.mode == "cloud":
        return f"rent {d.servers} x {d.cloud_offer} ({d.gpus} x {d.card})"
    return f"{d.servers} x {d.server} ({d.gpus} x {d.card})"


def memory(d: Deployment) -> str:
    return (
        f"{d.memory_per_gpu_gb:.1f} GB per GPU of {d.card_memory_gb:.1f} GB "
        f"({d.usable_memory_gb:.1f} GB usable at {d.headroom:.0%} headroom)"
    )


def work(d: Deployment) -> str:
    if d.time_to_train_h is not None:
        mfu = f", MFU {d.mfu:.0%}" if d.mfu is not None else ""
        return f"{hours(d.time_to_train_h)} per run, {d.throughput:,.0f} tokens/s{mfu}"
    return f"{d.throughput:,.0f} tokens/s generated"


def against(d: Deployment) -> str | None:
    """The target as written, the margin bought above it and the spare delivered."""
    if d.target is None:
        return None
    bought = f" + {d.margin:.0%} margin" if d.margin else ""
    if d.target_unit == "h":
        goal = f"deadline {hours(d.target)} per run{bought}"
    else:
        goal = f"{d.target:,.0f} {d.target_unit}{bought}"
    if d.share < 1 and d.target_unit != "h":
        goal = f"its {d.share:.0%} share: {goal}"
    if d.spare is None:
        return goal
    return f"{goal}: {d.spare:+.0%} spare against the target"


GOODPUT_PARTS = (
    ("steady_h", "steady state (steps and checkpoint stalls)"),
    ("overhead_h", "evaluation and ramp-up"),
    ("extra_saves_h", "extra checkpoint saves"),
    ("lost_work_h", "work redone after failures"),
    ("restart_h", "restarts and checkpoint reloads"),
)


def rounded_parts(parts: list[float], digits: int) -> list[float]:
    """`parts` rounded to `digits` so that they add up to their rounded sum (largest
    remainder): printed parts and the printed total then agree to the last digit."""
    scale = 10**digits
    total = round(sum(parts) * scale)
    floors = [math.floor(p * scale) for p in parts]
    order = sorted(range(len(parts)), key=lambda i: floors[i] - parts[i] * scale)
    for i in order[: max(0, total - sum(floors))]:
        floors[i] += 1
    return [f / scale for f in floors]


def goodput_parts(d: Deployment) -> list[tuple[str, float, float | None]]:
    """A training run's time and cost, steady state then each part goodput adds, then the
    total: (label, hours, money or None), rounded so that the parts add up to the total
    (hours to 0.01, money to 1). Empty for inference."""
    g = d.goodput
    if g is None:
        return []
    hours_each = [getattr(g, key) for key, _ in GOODPUT_PARTS]
    failures = f" ({g.failures:,.2f} expected)"
    labels = [label + (failures if key == "lost_work_h" else "") for key, label in GOODPUT_PARTS]
    shown_h = rounded_parts(hours_each, 2)
    money: list[float | None] = [None] * len(hours_each)
    if d.run_cost is not None and g.total_h > 0:
        money = list(rounded_parts([d.run_cost * h / g.total_h for h in hours_each], 0))
    rows = list(zip(labels, shown_h, money, strict=True))
    # The total is the rounded sum itself, so that no half-unit tie can split the two.
    total_h = round(sum(shown_h), 2)
    total_money = None if d.run_cost is None else float(sum(m or 0.0 for m in money))
    return [*rows, ("total per run", total_h, total_money)]


def goodput_lines(d: Deployment, currency: str) -> list[str]:
    """The text rows of a training deployment's run: each part's hours and money."""
    rows = goodput_parts(d)
    if not rows or d.goodput is None:
        return []
    g = d.goodput
    head = f"one run's time and cost, goodput {g.goodput:.1%}"
    if d.run_cost_basis:
        head += f" (cost: {d.run_cost_basis})"
    out = [head]
    width = max(len(label) for label, _, _ in rows)
    for label, h, amount in rows:
        cost = "" if amount is None else f"   {money(amount, currency):>16}"
        out.append(f"  {label:<{width}} {h:>12,.2f} h{cost}")
    return out


COST_LABELS = {
    "servers_capex": "servers (capex)",
    "network": "network (capex)",
    "storage": "storage (capex)",
    "rack_rent": "rack rent",
    "energy": "energy",
    "bandwidth": "bandwidth",
    "cloud_rental": "cloud rental",
}


def cost_lines(c: Cost) -> list[str]:
    """The cost section: every line of the TCO, then each soft-rule penalty, so that the
    printed figures add up to the printed totals (all whole units over the horizon).
    Totals stand in one column, their lines indented under them with the amount first."""
    cur = c.currency
    width = len(f"{max(c.objective_value, c.tco, c.credits):,.0f}")
    labels = max(30, len(objective_words(c)) + 2)

    def total(label: str, amount: float) -> str:
        return f"  {label:<{labels}} {amount:>{width},.0f} {cur}"

    out = [f"Cost breakdown (whole horizon, {c.horizon_months} months)"]
    b = c.breakdown
    for kind, label in COST_LABELS.items():
        items = [i for i in b.items if i.kind == kind]
        if items:
            out.append(total(label, getattr(b, kind)))
            out += [f"      {i.amount:>{width},.0f}  {i.subject}: {i.detail}" for i in items]
    out.append(total("TCO", c.tco))
    if c.resale:
        out.append(total("resale credit, sold now", c.resale) + "  (owned servers; not in the TCO)")
    end = c.horizon_resale
    if end is not None:
        out.append(total("resale credit at the horizon", end.amount) + f"  ({resale_words(c)})")
        out += [f"      {ln.amount:>{width},.0f}  {ln.server}: {ln.detail}" for ln in end.lines]
        out.append(f"      {'':>{width}}  {end.basis}")
    if c.credits:
        out.append(total("TCO less resale credits", c.tco - c.credits))
    if b.penalty_items:
        out.append(total("soft-rule penalties", c.penalties) + "  (steer the choice; not spent)")
        for p in b.penalty_items:
            src = f" ({p.source})" if p.source else ""
            out.append(
                f"      {p.amount:>{width},.0f}  {p.rule}{src}: {p.workload} on {p.deployment}"
            )
            out.append(f"      {'':>{width}}  {p.judged}: {p.reason}")
    if b.penalty_items or c.credits:
        out.append(total(objective_words(c).replace(" ", " = ", 1), c.objective_value))
    return out


def resale_words(c: Cost) -> str:
    """Where the resale credit stands: "if sold at month 36; not in the TCO"."""
    month = c.horizon_resale.month if c.horizon_resale is not None else c.horizon_months
    return f"if sold at month {month}; not in the TCO"


def objective_words(c: Cost) -> str:
    """What the objective adds up, as its line is labelled."""
    parts = ["TCO"]
    if c.penalties:
        parts.append("+ penalties")
    if c.credits:
        parts.append("- resale")
    return "objective " + " ".join(parts)


def proof_scope(info: SolverInfo) -> str | None:
    """Over what the optimum holds: "optimal over 1,240 layouts of 3 workloads"."""
    if info.candidate_layouts is None or info.candidate_workloads is None:
        return None
    verdict = "optimal" if info.proven_optimal else "best found"
    n, w = info.candidate_layouts, info.candidate_workloads
    return (
        f"{verdict} over {n:,} layout{'s' * (n != 1)} of {w:,} workload{'s' * (w != 1)} "
        "(every layout size searched, per server and cloud offer, that meets its deadline)"
    )


# Where CommonMark reads raw HTML: `<` before a tag name, `/`, `!` or `?` (CommonMark 0.31
# §6.6: open and closing tags, comments, declarations, processing instructions).
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_safe(document: str) -> str:
    """A markdown document that cannot carry HTML: each `<` that could open a tag becomes
    `&lt;`, which a viewer shows as `<`; `<script>` or `<img onerror>` from a catalogue
    name is never a tag. Applied to the whole document, code spans included: which text a
    viewer takes for code depends on its dialect (a backslash before a backtick, a `|` in
    a table cell), and the renderers write no `<` of their own there."""
    return _HTML_START.sub("&lt;", document)
