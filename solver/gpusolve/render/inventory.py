"""The inventory section of a plan: owned servers and contracted racks, and their fate."""

from __future__ import annotations

from gpusolve.models.inventory_report import Inventory
from gpusolve.render.fmt import money


def inventory_text(inv: Inventory | None, cur: str) -> list[str]:
    """'Owned (inventory)': per model and site what is used, sold or left idle; the sunk
    price (never in the TCO); the contracted racks and the rent they save."""
    if inv is None:
        return []
    out = ["", "Owned (inventory)"]
    for s in inv.servers:
        fate = [f"{s.in_service} in service"]
        for site, n in s.moved.items():
            fate.append(f"{n} of them moved to {site}")
        if s.move_cost:
            fate.append(f"moves {money(s.move_cost, cur)} (on rent)")
        if s.move_downtime_days:
            fate.append(f"out of service {s.move_downtime_days:g} days on the way")
        if s.sold:
            fate.append(f"{s.sold} sold x {money(s.resale_each or 0.0, cur)}")
        if s.idle:
            fate.append(f"{s.idle} left idle (powered off; no resale price given)")
        out.append(f"  {s.owned} x {s.server} at {s.site}: {', '.join(fate)}")
        paid = []
        if s.bought:
            paid.append(f"bought {s.bought}")
        if s.price_paid is not None:
            sunk = money(s.sunk or 0.0, cur)
            paid.append(f"{money(s.price_paid, cur)} each, {sunk} sunk (never in the TCO)")
        if paid:
            out.append(f"      {'; '.join(paid)}")
        if s.export_note:
            out.append(f"      {s.export_note}")
        if s.unusable:
            out.append(f"      {s.unusable}")
    for r in inv.racks:
        use = f"{r.used} of {r.racks} contracted rack(s) used"
        term = f"paid for {r.months_paid} months of the horizon"
        renewal = f"; renewed {r.renewed_months} months" if r.renewed_months else ""
        saved = f"; saves {money(r.saved, cur)} of rent" if r.saved else ""
        out.append(f"  {r.site}: {use}, {term}{renewal}{saved}")
    if inv.resale:
        out.append(f"  resale credit {money(inv.resale, cur)} (apart from the TCO)")
    return out


def inventory_markdown(inv: Inventory | None, cur: str) -> list[str]:
    """The same as `inventory_text`, as a Markdown section."""
    if inv is None:
        return []
    out = ["", "## Owned (inventory)", "", "Sunk: never in the TCO.", ""]
    out += ["| servers | site | in service | sold | idle | bought | paid (sunk) |"]
    out += ["|---|---|---:|---:|---:|---|---:|"]
    for s in inv.servers:
        sunk = money(s.sunk, cur) if s.sunk is not None else "-"
        out.append(
            f"| {s.owned}× {s.server} | {s.site} | {s.in_service} | {s.sold} | {s.idle} | "
            f"{s.bought or '-'} | {sunk} |"
        )
    if inv.racks or inv.resale:
        out.append("")
    for r in inv.racks:
        out.append(
            f"- {r.site}: {r.used} of {r.racks} contracted rack(s) used, paid for "
            f"{r.months_paid} months of the horizon; saves {money(r.saved, cur)} of rent."
        )
    if inv.resale:
        out.append(f"- Resale credit {money(inv.resale, cur)} (apart from the TCO).")
    return out
