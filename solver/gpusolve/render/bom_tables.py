"""The bill of materials as a text table, a markdown table and CSV for a spreadsheet."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence

from gpusolve.models.plan import BomLine, Plan

CSV_COLUMNS = (
    "section",
    "item",
    "site",
    "quantity",
    "unit",
    "unit_price",
    "amount",
    "source",
    "illustrative",
    "note",
)


def number(value: float | None) -> str:
    """A quantity or price as a spreadsheet reads it: whole numbers without '.0'."""
    if value is None:
        return ""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def csv_row(ln: BomLine) -> list[str]:
    """One BOM line as the CSV's cells, in `CSV_COLUMNS` order."""
    return [
        ln.section,
        ln.item,
        ln.site or "",
        number(ln.quantity),
        ln.unit,
        number(ln.unit_price),
        number(ln.amount),
        ln.source,
        "yes" if ln.illustrative else "no",
        ln.note,
    ]


def bom_csv(lines: list[BomLine]) -> str:
    """One row per BOM line under a header row."""
    return csv_text(CSV_COLUMNS, [csv_row(ln) for ln in lines])


# A cell a spreadsheet would read as a formula (or, after a tab or CR, as the start of
# one): OWASP, "CSV Injection" (owasp.org/www-community/attacks/CSV_Injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


def spreadsheet_cell(text: str) -> str:
    """A cell as text a spreadsheet shows rather than evaluates: a leading apostrophe
    before a formula start, as OWASP advises; a genuine number (-5, -0.25) stays numeric."""
    if text.startswith(_FORMULA_STARTS) and _NUMBER.fullmatch(text) is None:
        return "'" + text
    return text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Every CSV gpusolve writes: a header row, then the rows, each cell made safe for a
    spreadsheet (`spreadsheet_cell`); RFC 4180 quoting, '\\n' line ends."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([spreadsheet_cell(cell) for cell in row])
    return out.getvalue()


def _cells(ln: BomLine) -> list[str]:
    price = "incl." if ln.unit_price is None else f"{ln.unit_price:,.2f}".removesuffix(".00")
    amount = "" if ln.unit_price is None else f"{ln.amount:,.0f}"
    quantity = f"{ln.quantity:,.2f}".removesuffix(".00")
    flag = "*" if ln.illustrative else ""
    return [ln.section, ln.item, ln.site or "-", quantity, ln.unit, price + flag, amount]


def bom_text(plan: Plan) -> list[str]:
    """The BOM as aligned columns, then each distinct price source once, numbered."""
    if not plan.bom:
        return []
    currency = plan.cost.currency if plan.cost else ""
    sources = list(dict.fromkeys(ln.source for ln in plan.bom if ln.source))
    out = [f"Bill of materials ({currency}; * illustrative price, not a quote)"]
    out += table_text(plan.bom, sources)
    total = sum(ln.amount for ln in plan.bom if ln.unit_price is not None)
    out.append(f"  total = TCO over the horizon: {total:,.0f} {currency}")
    credit = resale_note(plan)
    if credit:
        out.append(f"  {credit}")
    out += [f"  [{i}] {s}" for i, s in enumerate(sources, 1)]
    return out


def table_text(lines: list[BomLine], sources: list[str]) -> list[str]:
    """BOM lines as aligned columns, each with its source's number in `sources`."""
    head = ["section", "item", "site", "quantity", "unit", "unit price", "amount"]
    rows = [_cells(ln) for ln in lines]
    for row, ln in zip(rows, lines, strict=True):
        what = ln.note.split(":")[0]  # the cost line's kind ("energy"), or "inside X"
        ref = f"[{sources.index(ln.source) + 1}] " if ln.source else ""
        row.append(ref + what)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    right = {3, 5, 6}

    def fmt(row: list[str]) -> str:
        cells = [
            c.rjust(widths[i]) if i in right else c.ljust(widths[i])
            for i, c in enumerate(row[: len(head)])
        ]
        tail = f"  {row[len(head)]}" if len(row) > len(head) else ""
        return ("  " + "  ".join(cells) + tail).rstrip()

    return [fmt(head), *(fmt(r) for r in rows)]


def bom_markdown(plan: Plan) -> list[str]:
    if not plan.bom:
        return []
    currency = plan.cost.currency if plan.cost else ""
    out = ["## Bill of materials", "", f"{currency}; * illustrative price, not a quote.", ""]
    out += table_markdown(plan.bom)
    total = sum(ln.amount for ln in plan.bom if ln.unit_price is not None)
    out += ["", f"Total = TCO over the horizon: {total:,.0f} {currency}."]
    credit = resale_note(plan)
    if credit:
        out += ["", f"{credit[0].upper()}{credit[1:]}."]
    return out


def table_markdown(lines: list[BomLine]) -> list[str]:
    """BOM lines as a markdown table, each with its source."""
    out = [
        "| section | item | site | quantity | unit | unit price | amount | source |",
        "|---|---|---|---:|---|---:|---:|---|",
    ]
    for ln in lines:
        cells = _cells(ln)
        source = ln.source or ln.note
        out.append("| " + " | ".join([*cells, source.replace("|", "/")]) + " |")
    return out


def resale_note(plan: Plan) -> str:
    """The resale credit under the BOM's total: money received after the horizon, not a
    line of the bill ("" when there is none)."""
    c = plan.cost
    if c is None or c.horizon_resale is None:
        return ""
    end = c.horizon_resale
    return (
        f"resale credit {end.amount:,.0f} {c.currency} if the servers are sold at month "
        f"{end.month} (not in the TCO, not a line of this bill)"
    )
