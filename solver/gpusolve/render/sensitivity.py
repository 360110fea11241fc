"""The sensitivity table (`plan --sensitivity`), as text and as markdown."""

from __future__ import annotations

from gpusolve.models.plan import Sensitivity, SensitivityRange

TITLE = "Sensitivity (one price or assumption at a time; the plan is unchanged within the range)"
NOTE = (
    "* the plan holds out to the end of the searched range "
    "(prices x0.1 to x10, efficiency x0.5 to x1.5)"
)


def number(value: float) -> str:
    """Prices from fractions of a yuan per kWh to millions per server, each readable."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def _end(r: SensitivityRange, value: float | None, searched: float) -> str:
    """One end of the range with its move from the current value; `*` when the plan held
    out to the searched limit."""
    shown = searched if value is None else value
    change = f" ({shown / r.current - 1:+.0%})" if r.current else ""
    return f"{number(shown)}{change}{'*' if value is None else ''}"


def _effort(s: Sensitivity) -> str:
    """How many re-solves, and their wall time when it was kept (`--timings`)."""
    return f"{s.solves} re-solves" + (f" in {s.wall_s:.1f} s" if s.wall_s else "")


def _cells(r: SensitivityRange) -> tuple[str, str, str, str]:
    return (
        f"{r.parameter} ({r.unit})",
        number(r.current),
        _end(r, r.low, r.searched_low),
        _end(r, r.high, r.searched_high),
    )


def _switch(plan: str | None, tco: float | None, currency: str) -> str:
    if plan is None:
        return "-"
    return plan + (f" (TCO {tco:,.0f} {currency})" if tco is not None else "")


def _why_no_table(s: Sensitivity) -> str | None:
    """Why an analysis has no ranges to show, if it has none."""
    if s.not_searched is not None:
        return f"not searched: {s.not_searched}"
    return None if s.ranges else "no price enters the plan's cost"


def sensitivity_text(s: Sensitivity | None, currency: str) -> list[str]:
    """An aligned table (parameter, current, stays optimal from, to) with the plan each end
    switches to under its row; no lines without an analysis."""
    if s is None:
        return []
    out = ["", TITLE]
    empty = _why_no_table(s)
    if empty is not None:
        return [*out, f"  {empty}"]
    head = ("parameter", "current", "from", "to")
    rows = [_cells(r) for r in s.ranges]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(4)]

    def line(cells: tuple[str, ...]) -> str:
        left = cells[0].ljust(widths[0])
        rest = "  ".join(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return f"  {left}  {rest}".rstrip()

    out.append(line(head))
    for r, row in zip(s.ranges, rows, strict=True):
        out.append(line(row))
        if r.below is not None:
            out.append(f"      below: {_switch(r.below, r.below_tco, currency)}")
        if r.above is not None:
            out.append(f"      above: {_switch(r.above, r.above_tco, currency)}")
    out.append(f"  {NOTE}")
    out.append(f"  {_effort(s)}")
    return out


def sensitivity_markdown(s: Sensitivity | None, currency: str) -> list[str]:
    """The same table as markdown, the switched plans in their own columns."""
    if s is None:
        return []
    out = ["", "## Sensitivity", ""]
    empty = _why_no_table(s)
    if empty is not None:
        return [*out, f"{empty[0].upper()}{empty[1:]}."]
    out.append("| parameter | current | stays optimal from | to | plan below | plan above |")
    out.append("|---|---:|---:|---:|---|---|")
    for r in s.ranges:
        name, current, low, high = _cells(r)
        below = _switch(r.below, r.below_tco, currency).replace("|", "\\|")
        above = _switch(r.above, r.above_tco, currency).replace("|", "\\|")
        out.append(f"| {name} | {current} | {low} | {high} | {below} | {above} |")
    out.append("")
    out.append(f"{NOTE}; {_effort(s)}.")
    return out
