"""Plain-text `gpusolve rules explain` report."""

from __future__ import annotations

from pathlib import Path

from gpusolve.models.rules_report import RulesExplainReport, TraceEntryOut, WorkloadExplain
from gpusolve.params import Params

_KIND_NAMES = {
    "card": "cards",
    "server": "servers",
    "offer": "colo offers",
    "cloud": "cloud offers",
}


def explain_text(report: RulesExplainReport, shipped_files: list[Path]) -> str:
    shipped = {str(f) for f in shipped_files}
    rules = report.rules
    user_files = [f for f in rules.files if f not in shipped]
    lines = [
        f"{rules.in_effect} rules in effect"
        + (f" (user files: {', '.join(user_files)})" if user_files else " (shipped set)")
        + (f"; disabled: {', '.join(rules.disabled)}" if rules.disabled else "")
    ]
    for item in report.workloads:
        lines += _workload_lines(item)
    return "\n".join(lines) + "\n"


def one_line(text: str) -> str:
    return " ".join(text.split())


def _workload_lines(item: WorkloadExplain) -> list[str]:
    out = [""]
    size = item.params_b
    size_text = f", {size:.3g}B parameters" if size is not None else ""
    out.append(f"workload {item.workload} ({item.kind}{size_text})")
    defaults = Params()
    changed = [
        f"{name} = {value} ({item.param_origin[name]})"
        for name, value in item.params.items()
        if item.param_origin[name] != "default" or value != getattr(defaults, name)
    ]
    out.append("  parameters set: " + ("; ".join(changed) if changed else "defaults only"))
    out.append("  rules fired, in order:")
    for entry in item.trace:
        if entry.rule == "user":
            out.append(f"    {entry.order:>2}. user requirements.headroom")
        else:
            out.append(
                f"    {entry.order:>2}. {entry.rule} ({entry.source}) {entry.title}"
                f"  [{_short(entry.where)}]"
            )
        out += [f"          {line}" for line in _entry_lines(entry)]
    out.append("  removed from the catalogue by require-rules:")
    if not item.removed:
        out.append("    (no require-rule on cards, servers, colo or cloud offers fired)")
    for r in item.removed:
        ids = ", ".join(r.removed) if r.removed else "none"
        out.append(f"    {r.rule} ({r.source}) {_KIND_NAMES[r.kind]}: {ids}")
        out += [
            f"      {item_id}: could not be evaluated ({error})"
            for item_id, error in r.errors.items()
        ]
    via = item.via_removed_cards
    if via.servers or via.cloud_offers:
        out.append("    built on removed cards: " + ", ".join([*via.servers, *via.cloud_offers]))
    if item.not_checked_without_layouts:
        out.append("  deployment-level rules (need a layout; checked when planning, not here):")
        out += [
            f"    {r.kind} {r.rule} ({r.source}): {one_line(r.expr)}"
            for r in item.not_checked_without_layouts
        ]
    if item.advice:
        out.append("  advice:")
        out += [f"    - {text}" for text in item.advice]
    return out


def _short(where: str) -> str:
    """Shipped rule files as rules/NAME:LINE; user files as given."""
    from gpusolve.load.data import data_dir

    shipped = str(data_dir("rules")) + "/"
    return "rules/" + where[len(shipped) :] if where.startswith(shipped) else where


def _entry_lines(entry: TraceEntryOut) -> list[str]:
    if entry.error:
        return [f"did not fire: `when` could not be evaluated ({entry.error})"]
    lines: list[str] = []
    for name, value in entry.set.items():
        previous = entry.previous.get(name)
        was, by = (previous.value, previous.by) if previous else (None, None)
        text = f"set {name} = {value} (was {was} from {by})"
        later = entry.overridden_by.get(name)
        if later:
            text += f"; overridden later by {later}"
        lines.append(text)
    for kind, expr in entry.require.items():
        lines.append(f"require {kind}: {one_line(expr)}")
    for kind, pref in entry.prefer.items():
        lines.append(f"prefer {kind}: {one_line(pref.expr)} (penalty {pref.penalty:,.0f})")
    if entry.advice:
        lines.append("advise (see advice below)")
    return lines
