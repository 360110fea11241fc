"""The servers a plan finances (`Plan.financed`), in one sentence each: how many, on what
terms, what each pays a month, and why the plan finances them."""

from __future__ import annotations

from collections.abc import Mapping

from gpusolve.models.money import FinancedServers
from gpusolve.models.plan import Plan


def financed_sentence(f: FinancedServers, currency: str, names: Mapping[str, str]) -> str:
    """One financed line in words."""
    server = names.get(f.server, f.server)
    buy_out = f" + buy-out {f.buy_out_per_server:,.0f}" if f.buy_out_per_server else ""
    source = (f.source or "catalog/finance/terms.yaml").rstrip(".")
    return (
        f"{f.count} x {server} at {f.site} by {f.offer} ({f.annual_rate:.1%} a year, "
        f"{f.term_months} months, {f.down_payment:.0%} down, buy-out {f.buy_out:.0%}; "
        f"{source}): each {f.down_per_server:,.0f} down "
        f"+ {f.term_months} x {f.monthly_per_server:,.0f}{buy_out} = "
        f"{f.paid_per_server:,.0f} against {f.unit_price:,.0f} in cash; interest "
        f"{f.interest:,.0f} {currency} in the TCO. Why: {f.why}"
    )


def financed_lines(plan: Plan, names: Mapping[str, str] | None = None) -> list[str]:
    """A sentence per financed line (none when the plan pays cash for everything)."""
    cur = plan.cost.currency if plan.cost is not None else ""
    return [financed_sentence(f, cur, names or {}) for f in plan.financed]
