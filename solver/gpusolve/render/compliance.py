"""The plan's market, compliance lines, exclusions and sources, as text or Markdown lines.

Shared by the text and Markdown renderers (JSON and YAML carry the fields as they are).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpusolve.models.plan import ComplianceLine, Excluded, Plan, SourceRef


def market_header(plan: Plan) -> list[str]:
    """The header's line on the market: how many catalogue servers it kept out, and why."""
    if plan.market is None or not plan.excluded:
        return []
    by_status: dict[str, int] = {}
    for e in plan.excluded:
        by_status[e.status] = by_status.get(e.status, 0) + 1
    why = ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
    n = len(plan.excluded)
    return [
        f"  market {plan.market}: {n} catalogue server{'s' if n != 1 else ''} not bought "
        f"(export status for China: {why}; see Compliance)"
    ]


def compliance_text(plan: Plan) -> list[str]:
    return market_text(plan.market, plan.market_basis, plan.compliance, plan.excluded)


def market_text(
    market: str | None,
    basis: str | None,
    compliance: list[ComplianceLine],
    excluded: list[Excluded],
) -> list[str]:
    """The compliance section `plan` and `colo` print alike."""
    if market is None:
        return []
    lines = ["", f"Compliance: market {market} ({basis})"]
    for c in compliance:
        lines.append(f"  {c.card} ({c.use}): {c.verdict}")
        if c.rule:
            lines.append(f"      {c.rule}; {c.source}")
    groups = _grouped(excluded)
    if groups:
        lines.append(
            "  Not bought (restricted for China; to allow one, add it to allow_restricted:)"
        )
        for card, servers, e in groups:
            lines.append(f"    {card}: {e.status}, {e.rule}: {', '.join(servers)}")
    return lines


def sources_text(plan: Plan) -> list[str]:
    if not plan.sources:
        return []
    lines = ["", "Sources (catalogue file:line of each item used)"]
    for s in plan.sources:
        lines.append(f"  {s.id:<28} {s.defined_at}{_patches(s)}")
    return lines


def compliance_markdown(plan: Plan) -> list[str]:
    if plan.market is None:
        return []
    out = ["", "## Export compliance", "", f"Market **{plan.market}** ({plan.market_basis}).", ""]
    for c in plan.compliance:
        rule = f" {c.rule}; {c.source}." if c.rule else ""
        out.append(f"- **{c.card}** ({c.use}): {c.verdict}.{rule}")
    for card, servers, e in _grouped(plan.excluded):
        listed = ", ".join(f"`{s}`" for s in servers)
        out.append(
            f"- Not bought: **{card}** ({e.status}, {e.rule}): {listed}; "
            "add it to `allow_restricted:` to allow it"
        )
    return out


def sources_markdown(plan: Plan, names: Mapping[str, str] | None = None) -> list[str]:
    """The appendix of products: each one's catalogue id (by its name, given `names`) and
    where the catalogue defines and patches it."""
    if not plan.sources:
        return []
    names = names or {}
    out = ["", "## Sources", "", "Products: their catalogue ids and where each is defined.", ""]
    out += ["| product | id | kind | defined at | patched at |", "|---|---|---|---|---|"]
    for s in plan.sources:
        patches = "; ".join(f"{p.at} ({', '.join(p.fields)})" for p in s.patched_at) or "-"
        name = names.get(s.id, s.id).replace("|", "/")
        out.append(f"| {name} | `{s.id}` | {s.kind} | {s.defined_at} | {patches} |")
    return out


def _patches(s: SourceRef) -> str:
    return "".join(f"; patched at {p.at} ({', '.join(p.fields)})" for p in s.patched_at)


def _grouped(excluded: list[Excluded]) -> list[tuple[str, list[str], Excluded]]:
    """Exclusions grouped by card, in first-seen order."""
    groups: dict[str, tuple[list[str], Excluded]] = {}
    for e in excluded:
        groups.setdefault(e.card, ([], e))[0].append(e.item)
    return [(card, servers, first) for card, (servers, first) in groups.items()]
