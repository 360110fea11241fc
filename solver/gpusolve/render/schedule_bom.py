"""`plan --bom` with `periods:`: the bill of materials of each purchase period, in the
format asked for (the tables are `bom_tables.py`'s, as for a single plan).

Each period's lines add up to its spend (capex, the racks it contracts over their term,
its energy, site fees and rentals); the periods' totals add up to the TCO plus the residual
value credited at the horizon, which is said under the last period, not a line.
"""

from __future__ import annotations

from gpusolve.models.common import versioned
from gpusolve.models.plan import BomLine
from gpusolve.models.schedule import Schedule, SchedulePeriod
from gpusolve.render.bom_tables import CSV_COLUMNS, csv_row, csv_text, table_markdown, table_text
from gpusolve.render.fmt import markdown_safe

SCHEDULE_CSV_COLUMNS = ("period", "start_month", *CSV_COLUMNS)


def _total(lines: list[BomLine]) -> float:
    return sum(ln.amount for ln in lines if ln.unit_price is not None)


def _capex(lines: list[BomLine]) -> float:
    return sum(ln.amount for ln in lines if ln.section == "server")


def _title(p: SchedulePeriod) -> str:
    return f"P{p.index}  months {p.start_month}-{p.start_month + p.months}"


def _residual(s: Schedule) -> int:
    return sum(p.spend.residual_value for p in s.periods)


def _closing(s: Schedule) -> str:
    total = sum(_total(p.bom) for p in s.periods)
    credit = _residual(s)
    tco = f"{s.tco:,}" if s.tco is not None else "-"
    said = f"all periods: {total:,.0f} {s.currency}"
    if credit:
        return f"{said} = TCO {tco} + residual value credited at the horizon {credit:,}"
    return f"{said} = TCO {tco}"


def schedule_bom_text(s: Schedule) -> str:
    sources = list(dict.fromkeys(ln.source for p in s.periods for ln in p.bom if ln.source))
    out = [
        f"Bill of materials per period ({s.currency}; * illustrative price, not a quote)",
        "",
    ]
    for p in s.periods:
        if not p.bom:
            continue
        out.append(_title(p))
        out += table_text(p.bom, sources)
        out.append(f"  period total {_total(p.bom):,.0f} {s.currency} (capex {_capex(p.bom):,.0f})")
        out.append("")
    out.append(_closing(s))
    out += [f"  [{i}] {src}" for i, src in enumerate(sources, 1)]
    return "\n".join(out) + "\n"


def schedule_bom_csv(s: Schedule) -> str:
    """One row per item and period, with the period's index and start month first."""
    rows = ([str(p.index), str(p.start_month), *csv_row(ln)] for p in s.periods for ln in p.bom)
    return csv_text(SCHEDULE_CSV_COLUMNS, rows)


def schedule_bom_rows(s: Schedule) -> list[dict[str, object]]:
    """The lines as JSON or YAML rows, each with its period and start month."""
    return [
        {"period": p.index, "start_month": p.start_month, **ln.model_dump(mode="json")}
        for p in s.periods
        for ln in p.bom
    ]


def schedule_bom_markdown(s: Schedule) -> str:
    out = [
        "## Bill of materials per period",
        "",
        f"{s.currency}; * illustrative price, not a quote.",
    ]
    for p in s.periods:
        if not p.bom:
            continue
        out += ["", f"### {_title(p)}", ""]
        out += table_markdown(p.bom)
        out += ["", f"Period total {_total(p.bom):,.0f} {s.currency} (capex {_capex(p.bom):,.0f})."]
    out += ["", _closing(s)[0].upper() + _closing(s)[1:] + "."]
    return markdown_safe("\n".join(out) + "\n")


def render_schedule_bom(s: Schedule, fmt: str) -> str:
    """`plan --bom` over periods; a schedule without periods (none found) prints as itself."""
    if fmt == "csv":
        return schedule_bom_csv(s)
    if fmt in ("json", "yaml"):
        import json

        import yaml

        rows = versioned("schedule-bom", {"lines": schedule_bom_rows(s)})
        if fmt == "json":
            return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
        return yaml.safe_dump(rows, sort_keys=False, allow_unicode=True, width=100)
    if fmt == "markdown":
        return schedule_bom_markdown(s)
    return schedule_bom_text(s)
