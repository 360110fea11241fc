"""Plain-text `gpusolve rules` output: list, show, check, fields and explain."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from gpusolve.models.params import SPECS, Params
from gpusolve.models.rules import Prefer, penalty_text
from gpusolve.models.rules_report import (
    CheckedFile,
    RulesExplainReport,
    TraceEntryOut,
    TracePrefer,
    WorkloadExplain,
)
from gpusolve.rules.environment import BASE_VARIABLES, KIND_VARIABLES, describe_fields
from gpusolve.rules.loader import CompiledRule, RuleSet

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
    lines += [_prefer_line(kind, pref, " ") for kind, pref in entry.prefer.items()]
    if entry.advice:
        lines.append("advise (see advice below)")
    return lines


def _prefer_line(kind: str, pref: TracePrefer | Prefer, gap: str) -> str:
    """A preference: what it prefers and the penalty of an option that misses it."""
    penalty = penalty_text(pref.share, pref.penalty)
    return f"prefer {kind}: {one_line(pref.expr)}{gap}(penalty {penalty})"


def effects(rule: CompiledRule) -> str:
    parts = []
    if rule.sets:
        parts.append("set " + ",".join(rule.sets))
    if rule.requires:
        parts.append("require " + ",".join(rule.requires))
    if rule.prefers:
        parts.append("prefer " + ",".join(rule.prefers))
    if rule.advise is not None:
        parts.append("advise")
    return "; ".join(parts)


def list_text(ruleset: RuleSet, selected: list[CompiledRule]) -> str:
    width = max((len(r.id) for r in selected), default=10)
    lines = []
    for r in selected:
        where = Path(r.file).name + (f":{r.line}" if r.line else "")
        origin = "" if r.shipped else "  (user)"
        lines.append(f"{r.id:<{width}}  {r.source}  {r.title}{origin}")
        lines.append(f"{'':<{width}}        {effects(r)}  [{where}]")
    for rule_id, where in ruleset.disabled.items():
        lines.append(f"{rule_id:<{width}}  disabled by {where}")
    files = len(ruleset.files)
    lines.append(
        f"{len(selected)} rule(s) shown; {len(ruleset.rules)} in effect from {files} file(s)"
    )
    return "\n".join(lines) + "\n"


def show_text(rule: CompiledRule, heuristic: dict[str, Any] | None) -> str:
    r = rule.rule
    origin = "shipped" if rule.shipped else "user file"
    lines = [f"rule {r.id}  ({rule.where}, {origin})"]
    lines.append(f"  title:  {r.title}")
    lines.append(f"  source: {r.source}")
    if heuristic:
        lines.append(f"    document {heuristic['document']}, {heuristic['section']}")
        lines += _wrap(heuristic["summary"], 4)
        if heuristic.get("correction"):
            lines.append("    correction:")
            lines += _wrap(heuristic["correction"], 6)
    lines.append(f"  when:   {one_line(r.when)}")
    for name, value in rule.sets.items():
        spec = next(s for s in SPECS if s.name == name)
        default = getattr(Params(), name)
        lines.append(f"  set {name} = {value}  (default {default}; {spec.doc})")
    for kind, expr in r.require.items():
        lines.append(f"  require {kind}: {one_line(expr)}")
    for kind, pref in r.prefer.items():
        lines.append(f"  {_prefer_line(kind, pref, '  ')}")
        if pref.reason:
            lines.append(f"    reason: {pref.reason}")
    if r.advise:
        lines.append("  advise:")
        lines += _wrap(r.advise, 4)
    if r.notes:
        lines.append("  notes:")
        lines += _wrap(r.notes, 4)
    lines += [f"  replaces the rule defined at {where}" for where in rule.replaced]
    return "\n".join(lines) + "\n"


def _wrap(text: str, indent: int, width: int = 92) -> list[str]:
    return [" " * indent + line for line in textwrap.wrap(one_line(text), width=width - indent)]


def check_text(checked: list[CheckedFile], in_effect: int) -> str:
    lines = [
        f"ok: {c.path}: {c.rules} rule(s) ({c.rules - c.replacing_shipped} new, "
        f"{c.replacing_shipped} replacing shipped), {c.disabled} disabled"
        for c in checked
    ]
    lines.append(f"{in_effect} rule(s) in effect with the shipped set")
    return "\n".join(lines) + "\n"


def fields_text(contexts: list[str]) -> str:
    """The variables each context (`when`, or a require/prefer kind) sees, then every
    variable's fields with their types."""
    lines = []
    for ctx in contexts:
        names = list(BASE_VARIABLES) if ctx == "when" else [*KIND_VARIABLES[ctx], *BASE_VARIABLES]
        lines.append(f"{ctx}: {', '.join(names)}")
    lines.append("")
    variables = {**BASE_VARIABLES}
    for ctx in contexts:
        if ctx != "when":
            variables.update(KIND_VARIABLES[ctx])
    for name, t in variables.items():
        lines.append(f"{name}  ({t.describe()})")
        for path, type_text, doc in describe_fields(t, name):
            lines.append(f"  {path:<44} {type_text}" + (f"  — {doc}" if doc else ""))
    return "\n".join(lines) + "\n"
