"""The colocation comparison as text and Markdown."""

from __future__ import annotations

from gpusolve.models.colo import ColoReport, ColoRow
from gpusolve.render.compliance import market_text
from gpusolve.render.fmt import markdown_safe


def _fleet(report: ColoReport) -> str:
    servers = ", ".join(f"{n} x {s}" for s, n in report.fleet.items())
    return f"{servers} ({report.fleet_power_kw:g} kW peak)"


def _shown(report: ColoReport, top: int | None) -> list[ColoRow]:
    feasible = [r for r in report.offers if r.feasible]
    return feasible[:top] if top else feasible


def colo_text(report: ColoReport, top: int | None = None) -> str:
    cur = report.currency
    lines = [f"Colocation offers for {_fleet(report)}, over {report.horizon_months} months", ""]
    for i, r in enumerate(_shown(report, top), 1):
        lines.append(
            f"{i:>2}. {r.offer} ({r.city}, {r.region}, {r.cooling} {r.rack_kw:g} kW): "
            f"{r.racks} rack(s), {r.monthly:,.0f} {cur}/month, {r.tco:,.0f} {cur} in total"
        )
        lines.append(
            f"      rent {r.rack_rent_month:,.0f} + energy {r.energy_month:,.0f} "
            f"(PUE {r.pue:g}, {r.power_price_per_kwh:g}/kWh) + bandwidth {r.bandwidth_month:,.0f}"
        )
        if r.moves:
            lines.append(
                f"      {r.servers_moved} owned server(s) moved here: {r.moves:,.0f} {cur} "
                f"once, out of service up to {r.move_downtime_days:g} days"
            )
        for fill in r.fill[:3]:
            lines.append("      rack: " + ", ".join(f"{n} x {k}" for k, n in fill.items()))
        if len(r.fill) > 3:
            lines.append(f"      ... {len(r.fill) - 3} more racks")
        for note in r.notes:
            lines.append(f"      note: {note}")
        lines += _rule_lines(r, cur)
    refused = [r for r in report.offers if not r.feasible]
    if refused:
        lines += ["", f"Cannot host this fleet ({len(refused)}):"]
        for r in refused:
            lines.append(f"  {r.offer} ({r.city}, {r.cooling} {r.rack_kw:g} kW): {r.reasons[0]}")
    lines += _not_judged(report)
    lines += market_text(report.market, report.market_basis, report.compliance, report.excluded)
    return "\n".join(lines) + "\n"


def _rule_lines(r: ColoRow, cur: str) -> list[str]:
    """The soft-rule penalties of one offer, the same ones `plan` charges there."""
    hits = [h for h in r.rules if h.effect == "penalty"]
    if not hits:
        return []
    out = [
        f"      rule {h.rule} ({h.source}) on {h.server}: {h.amount:,.0f} {cur} penalty; {h.reason}"
        for h in hits
    ]
    out.append(
        f"      ranked at TCO + penalties = {r.objective or 0:,.0f} {cur} "
        "(penalties steer, they are not spent)"
    )
    return out


def _not_judged(report: ColoReport) -> list[str]:
    if not report.rules_not_judged:
        return []
    rules = ", ".join(f"{k.rule} ({k.source})" for k in report.rules_not_judged)
    return [
        "",
        f"Rules not judged here, they depend on the workload (`plan` applies them): {rules}",
    ]


def colo_markdown(report: ColoReport, top: int | None = None) -> str:
    cur = report.currency
    out = [
        "# Colocation comparison",
        "",
        f"Fleet: {_fleet(report)}; horizon {report.horizon_months} months.",
        "",
        f"| rank | offer | city | cooling | rack kW | racks | {cur}/month | {cur} total "
        "| rules (penalty) | notes |",
        "|---:|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for i, r in enumerate(_shown(report, top), 1):
        fired = [h for h in r.rules if h.effect == "penalty"]
        rules = "; ".join(f"`{h.rule}` ({h.source}) {h.amount:,.0f}" for h in fired) or "-"
        out.append(
            f"| {i} | {r.offer} | {r.city} ({r.region}) | {r.cooling} | {r.rack_kw:g} | "
            f"{r.racks} | {r.monthly:,.0f} | {r.tco:,.0f} | {rules} | "
            f"{'; '.join(r.notes) or '-'} |"
        )
    refused = [r for r in report.offers if not r.feasible]
    if refused:
        out += ["", "## Offers that cannot host it", ""]
        out += [f"- **{r.offer}**: {'; '.join(r.reasons)}" for r in refused]
    out += [line for line in _not_judged(report)]
    out += ["", "_Offers rank by TCO + soft-rule penalties (steer, not spent), like plans._"]
    out += ["", "_Prices marked illustrative in the catalogue are not quotes._"]
    return markdown_safe("\n".join(out) + "\n")
