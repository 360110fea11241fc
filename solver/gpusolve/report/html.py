"""Render a plan, frontier, colocation ranking or estimate as one self-contained HTML page.

Everything the page shows is inline: styles, SVG charts and pictures; it has no script and
a Content-Security-Policy that forbids any fetch, so the file reads the same offline, in a
mail attachment or printed. Templates are jinja2 with autoescaping on: a workload or
catalogue name cannot inject markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusolve.explain.payments import is_credit
from gpusolve.models.colo import ColoReport, ColoRow
from gpusolve.models.estimate import EstimateReport
from gpusolve.models.frontier import Frontier
from gpusolve.models.plan import Cost, CostItem, Deployment, Plan
from gpusolve.render.about import about, named, shown_path
from gpusolve.render.fmt import (
    COST_LABELS,
    goodput_parts,
    hardware,
    hours,
    layout,
    proof_scope,
    work,
)
from gpusolve.render.frontier import cost_per_hour_saved
from gpusolve.render.memo import (
    cash_periods,
    estimate_headline,
    located_source,
    memo,
    periods,
)
from gpusolve.report import charts, racks

# Order and words of the memory parts (estimate's MemoryGB fields).
MEMORY_PARTS = {
    "weights": "weights",
    "gathered_weights": "gathered ZeRO-3 layers",
    "gradients": "gradients",
    "optimizer": "optimizer states",
    "activations": "activations",
    "kv_cache": "KV cache",
    "overhead": "runtime overhead",
}
STEP_PARTS = {
    "compute_s": "compute",
    "recompute_s": "recomputation",
    "tp_comm_s": "TP communication",
    "cp_comm_s": "CP communication",
    "ep_comm_s": "EP communication",
    "pp_comm_s": "PP sends",
    "bubble_s": "pipeline bubble",
    "dp_comm_s": "DP communication",
    "optimizer_s": "optimizer",
}


@dataclass(frozen=True)
class ReportContext:
    """What the page needs beyond the command's output model: catalogue facts for the rack
    pictures, the heuristics' text for the rules that fired, and which files were read."""

    inputs: list[str] = field(default_factory=list)
    catalog_paths: list[str] = field(default_factory=list)
    server_units: dict[str, int] = field(default_factory=dict)
    server_kw: dict[str, float] = field(default_factory=dict)
    offer_units: dict[str, int] = field(default_factory=dict)
    heuristics: dict[str, str] = field(default_factory=dict)
    # The demand each workload states (requirements), for capacity against demand.
    deadlines_h: dict[str, float] = field(default_factory=dict)
    targets_tps: dict[str, float] = field(default_factory=dict)
    concurrency: dict[str, int] = field(default_factory=dict)
    # The appendix: each deployment's launch files, (path, text), as `plan --launch` writes.
    launch: list[tuple[str, str]] = field(default_factory=list)
    # Catalogue id -> product name, for the memo (the ids stay in the appendix).
    names: dict[str, str] = field(default_factory=dict)
    made_on: str = ""  # the day the report was made, ISO 8601
    version: str = ""  # gpusolve's version that made it


def context_for(
    catalog: Any,
    catalog_paths: list[Path],
    inputs: list[Path],
    reqs: Any = None,
    plan: Plan | None = None,
) -> ReportContext:
    """The report context of a run: its catalogue (a `Catalog`), the files it read and,
    for a plan, its `Requirements` (each workload's deadline or target throughput) and,
    given the finished `plan`, the launch files `plan --launch` would write."""
    workloads = reqs.workloads if reqs is not None else []
    launch: list[tuple[str, str]] = []
    if plan is not None and reqs is not None and plan.status in ("optimal", "feasible"):
        from gpusolve.render.launch import launch_files

        launch = [(f.path, f.text) for f in launch_files(plan, reqs, catalog)]
    made = about(catalog, inputs)  # as the Markdown memo says it
    return ReportContext(
        launch=launch,
        inputs=list(made.inputs),
        catalog_paths=[shown_path(p) for p in catalog_paths],
        names=dict(made.names),
        made_on=made.made_on,
        version=made.version,
        server_units={k: s.rack_units for k, s in catalog.servers.items()},
        server_kw={k: s.power_kw for k, s in catalog.servers.items()},
        offer_units={k: o.rack_units for k, o in catalog.colo_offers.items()},
        heuristics=heuristic_texts(),
        deadlines_h={w.name: w.deadline_hours for w in workloads if w.deadline_hours},
        targets_tps={
            w.name: w.target_tokens_per_s
            for w in workloads
            if getattr(w, "target_tokens_per_s", None)
        },
        concurrency={w.name: w.concurrency for w in workloads if getattr(w, "concurrency", None)},
    )


def heuristic_texts() -> dict[str, str]:
    """H01-H44 -> the project's summary of it (rules/heuristics.yaml); {} if unreadable."""
    from gpusolve.errors import InputError
    from gpusolve.load import data_dir, parse_model, read_yaml
    from gpusolve.models.rules import HeuristicsFile

    try:
        parsed = parse_model(
            read_yaml(data_dir("rules") / "heuristics.yaml"), HeuristicsFile, "heuristics"
        )
    except (InputError, FileNotFoundError):
        return {}
    return {h.id: " ".join(h.summary.split()) for h in parsed.heuristics}


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpusolve.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = num
    env.filters["exact"] = exact
    env.filters["sig"] = sig
    env.filters["qty"] = qty
    env.filters["names"] = lambda keys: {k: k.replace("_", " ") for k in keys}
    env.filters["pct"] = lambda x, digits=0: "-" if x is None else f"{x:.{digits}%}"
    env.filters["hours"] = hours
    env.globals.update(
        hardware=hardware,
        named=named,
        layout=layout,
        work=work,
        goodput_parts=goodput_parts,
        COST_LABELS=COST_LABELS,
        MEMORY_PARTS=MEMORY_PARTS,
        STEP_PARTS=STEP_PARTS,
        charts_missing=None if charts.available() else charts.INSTALL_HINT,
    )
    return env


def num(value: float | None, digits: int = 0) -> str:
    """A figure as the report prints it: thousands separated, `digits` decimals; '-' none."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def exact(value: float | None) -> str:
    """A figure of the output model printed whole: thousands separated, no rounding, so a
    reader (and the tests) can check it against the JSON."""
    if value is None:
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,}"


def qty(value: float | None) -> str:
    """A quantity as a purchase order prints it: at most two decimals (10,123.33
    instance-hours), none when whole."""
    if value is None:
        return "-"
    return f"{value:,.2f}".removesuffix(".00")


def sig(value: float | None) -> str:
    """A searched figure (a range end found by bisection) to four significant digits, whole
    units with separators from 1,000 up: the search's precision, not the float's."""
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def render_template(template: str, **values: Any) -> str:
    return str(_environment().get_template(template).render(**values))


def plan_html(
    plan: Plan, ctx: ReportContext | None = None, frontier: Frontier | None = None
) -> str:
    """The plan's report: the memo screen, the payment schedule, then the details. With
    `frontier` (points solved by `gpusolve frontier`), its chart and table too."""
    ctx = ctx or ReportContext()
    rack_pictures = [
        picture
        for site in plan.sites
        for picture in racks.site_racks(
            site, ctx.server_units, ctx.server_kw, ctx.offer_units.get(site.offer)
        )
    ]
    cost = plan.cost
    pb = plan.payback
    capacity = capacity_rows(plan, ctx)
    shown_memo = memo(plan, ctx.names)
    return render_template(
        "plan.html.j2",
        plan=plan,
        ctx=ctx,
        cost=cost,
        memo=shown_memo,
        memo_estimates=estimate_headline(shown_memo) if shown_memo is not None else "",
        periods=periods(plan),
        cash_periods=cash_periods(plan.cash),
        scope=proof_scope(plan.solver),
        racks=rack_pictures,
        catalogue_files=catalogue_files(plan),
        lines=cost_rows(plan) if cost is not None else None,
        cost_chart=charts.cost_chart(cost) if cost is not None else None,
        payment_chart=charts.payment_chart(
            plan.payments,
            cost.currency if cost is not None else "",
            pb.rental_months if pb is not None else None,
            pb.payback_month if pb is not None else None,
        ),
        capacity=capacity,
        capacity_chart=charts.capacity_chart([(c.workload, c.share, c.label) for c in capacity]),
        tornado=charts.tornado_chart(plan.sensitivity) if plan.sensitivity else None,
        memory_bars=[memory_bar(d) for d in plan.deployments],
        frontier=frontier,
        frontier_chart=charts.frontier_chart(frontier) if frontier is not None else None,
        frontier_per_hour=cost_per_hour_saved(frontier) if frontier is not None else [],
    )


@dataclass(frozen=True)
class CostRow:
    """One line of the TCO as the report prints it: the cost line and its bill-of-materials
    facts merged (quantity, unit price, what comes inside), its source a footnote number."""

    item: CostItem
    label: str
    inside: str  # "8 x ascend-910b each" for a server line
    note: int | None  # footnote number of its price source


@dataclass(frozen=True)
class CostLines:
    spend: list[tuple[str, str, list[CostRow], float]]  # (kind, label, rows, subtotal) paid
    credits: list[CostRow]
    sources: list[str]  # footnotes, numbered from 1
    paid: float  # the TCO as paid, credits apart
    net: float  # paid plus the credits


def cost_rows(plan: Plan) -> CostLines:
    """Every cost line once, by kind; credits apart; each distinct source once."""
    cost = plan.cost
    assert cost is not None
    sources: list[str] = []

    def row(item: CostItem) -> CostRow:
        note = None
        source = located_source(plan, item)
        if source:
            if source not in sources:
                sources.append(source)
            note = sources.index(source) + 1
        return CostRow(item, COST_LABELS.get(item.kind, item.kind), inside_of(plan, item), note)

    spend = []
    for kind, label in COST_LABELS.items():
        rows = [row(i) for i in cost.breakdown.items if i.kind == kind and not is_credit(i)]
        if rows:
            spend.append((kind, label, rows, getattr(cost.breakdown, kind)))
    known = set(COST_LABELS)
    others = [row(i) for i in cost.breakdown.items if i.kind not in known and not is_credit(i)]
    if others:
        spend.append(("other", "other", others, sum(r.item.amount for r in others)))
    credit_rows = [row(i) for i in cost.breakdown.items if is_credit(i)]
    paid = sum(r.item.amount for *_, rows, _total in spend for r in rows)
    return CostLines(spend, credit_rows, sources, paid, paid + credits_of(cost, credit_rows))


def credits_of(cost: Cost, rows: list[CostRow]) -> float:
    return (
        sum(r.item.amount for r in rows) if rows else getattr(cost.breakdown, "residual_value", 0.0)
    )


def inside_of(plan: Plan, item: CostItem) -> str:
    """What the bill of materials counts inside a server line: its cards, per server."""
    if item.kind != "servers_capex":
        return ""
    cards = [
        b
        for b in plan.bom
        if b.section == "card" and b.note == f"inside {item.subject}" and b.site == item.site
    ]
    per = item.quantity or 1
    return "; ".join(f"{b.quantity / per:g} x {b.item} each" for b in cards)


@dataclass(frozen=True)
class Capacity:
    workload: str
    need: str  # the demand in words
    have: str  # what the deployment gives
    share: float  # demand / capacity: 1.0 is the limit
    label: str


def capacity_rows(plan: Plan, ctx: ReportContext) -> list[Capacity]:
    """Per workload with a stated demand: a training run's time against its deadline, a
    service's target tokens/s against the tokens/s deployed, or else its concurrent
    requests against the sequences its replicas hold at once (micro-batch x replicas)."""
    out = []
    for d in plan.deployments:
        deadline = ctx.deadlines_h.get(d.workload)
        target = ctx.targets_tps.get(d.workload)
        users = ctx.concurrency.get(d.workload)
        held = d.parallel.micro_batch * d.replicas
        if d.time_to_train_h is not None and deadline:
            share = d.time_to_train_h / deadline
            need, have = f"a run within {hours(deadline)}", f"{hours(d.time_to_train_h)} per run"
        elif d.time_to_train_h is None and target and d.throughput:
            share = target / d.throughput
            need, have = f"{target:,.0f} tokens/s", f"{d.throughput:,.0f} tokens/s"
        elif d.time_to_train_h is None and users and held:
            share = users / held
            need, have = f"{users:,} concurrent requests", f"{held:,} sequences at once"
        else:
            continue
        out.append(Capacity(d.workload, need, have, share, f"{have} for {need} ({share:.0%})"))
    return out


def catalogue_files(plan: Plan) -> list[str]:
    """The catalogue files the plan's items were defined or patched in, first use first."""
    files: dict[str, None] = {}
    for ref in plan.sources:
        for at in [ref.defined_at, *(p.at for p in ref.patched_at)]:
            files[at.rsplit(":", 1)[0] if ":" in at else at] = None
    return list(files)


@dataclass(frozen=True)
class Segment:
    label: str
    value: float
    start: float  # share of the bar's width where it begins, 0-1
    width: float  # share of the bar's width, 0-1
    css: str


def memory_bar(d: Deployment) -> list[Segment]:
    """One deployment's GPU memory as a bar over the card's memory: what is used, by part
    when the plan gives the parts, what is still free within the usable part, and the
    headroom the rules keep free."""
    card = max(d.card_memory_gb, d.memory_per_gpu_gb, 1e-9)
    used = d.memory_per_gpu_gb
    parts = [
        (name, d.memory_parts_gb[key], f"p{i}")
        for i, (key, name) in enumerate(MEMORY_PARTS.items())
        if d.memory_parts_gb.get(key, 0.0) > 0
    ] or [("used", used, "used")]
    free = max(d.usable_memory_gb - used, 0.0)
    reserve = max(card - max(used, d.usable_memory_gb), 0.0)
    return _segments([*parts, ("free", free, "free"), ("headroom", reserve, "reserve")], card)


def _segments(parts: list[tuple[str, float, str]], whole: float) -> list[Segment]:
    out, at = [], 0.0
    for label, value, css in parts:
        width = value / whole if whole > 0 else 0.0
        out.append(Segment(label, value, at, width, css))
        at += width
    return out


def frontier_html(f: Frontier, from_zero: bool = True, ctx: ReportContext | None = None) -> str:
    return render_template(
        "frontier.html.j2",
        f=f,
        ctx=ctx or ReportContext(),
        chart=charts.frontier_chart(f, from_zero),
        per_hour=cost_per_hour_saved(f),
    )


def colo_html(report: ColoReport, top: int | None, ctx: ReportContext | None = None) -> str:
    ctx = ctx or ReportContext()
    feasible = [r for r in report.offers if r.feasible]
    shown = feasible[:top] if top else feasible
    best = shown[0] if shown else None
    pictures = (
        racks.colo_racks(best, ctx.server_units, ctx.server_kw, ctx.offer_units.get(best.offer))
        if best is not None
        else []
    )
    return render_template(
        "colo.html.j2",
        report=report,
        ctx=ctx,
        shown=shown,
        bills=monthly_bills(shown),
        refused=[r for r in report.offers if not r.feasible],
        best=best,
        racks=pictures,
    )


def monthly_bills(rows: list[ColoRow]) -> list[list[Segment]]:
    """Each offer's monthly bill (rent, energy, bandwidth) as a bar on one common scale,
    so the offers compare by length."""
    largest = max((r.monthly or 0.0 for r in rows), default=0.0)
    return [
        _segments(
            [
                ("rack rent", r.rack_rent_month or 0.0, "p1"),
                ("energy", r.energy_month or 0.0, "p4"),
                ("bandwidth", r.bandwidth_month or 0.0, "p6"),
            ],
            largest,
        )
        for r in rows
    ]


def estimate_html(report: EstimateReport, ctx: ReportContext | None = None) -> str:
    return render_template(
        "estimate.html.j2",
        report=report,
        ctx=ctx or ReportContext(),
        parts_of=parts_of,
    )


def parts_of(values: dict[str, float], names: dict[str, str]) -> list[Segment]:
    """The named parts of a whole (memory by kind, step time by cause) as bar segments,
    the parts that are zero left out."""
    parts = [
        (name, values.get(key, 0.0), f"p{i}")  # a part keeps its colour across bars
        for i, (key, name) in enumerate(names.items())
        if values.get(key, 0.0) > 0
    ]
    return _segments(parts, sum(v for _, v, _ in parts))
