"""Plain-text `gpusolve catalog` output: validate counts, item lines, one item's fields."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpusolve.load.catalog import KINDS, LoadedCatalog
from gpusolve.models.catalog import PART_KINDS, Catalog
from gpusolve.models.plan import Excluded


def validate_text(loaded: LoadedCatalog) -> str:
    counts = loaded.counts()
    cat = loaded.catalog
    lines = [f"ok: {len(loaded.files)} file(s), currency {cat.currency}"]
    lines += [f"  {kind:<13} {counts[kind]:>4}" for kind in KINDS]
    cards, servers = list(cat.cards.values()), list(cat.servers.values())
    ranged = sum(len(i.spec_ranges) for i in cards) + sum(len(i.spec_ranges) for i in servers)
    priced = sum(1 for s in servers if s.price_range is not None)
    dated = sum(1 for c in cards if c.as_of) + sum(1 for s in servers if s.as_of)
    items = cards + servers
    lines.append(
        f"  {ranged} figure(s) within the ranges their sources give; {priced} server price "
        f"range(s) hold their price; {dated} of {len(items)} cards and servers dated (as_of)"
    )
    return "\n".join(lines) + "\n"


def list_text(
    cat: Catalog,
    kinds: list[str],
    market: str | None = None,
    excluded: Sequence[Excluded] = (),
) -> str:
    """Items by kind; with a market, a head line and the servers it keeps out, and why."""
    lines = []
    if market is not None:
        lines.append(
            f"market {market}: {len(cat.servers)} server(s) can be bought, {len(excluded)} "
            "left out (export status for China; add one to allow_restricted: to allow it)"
        )
    for k in kinds:
        items = list(getattr(cat, k).values())
        lines.append(f"{k} ({len(items)})")
        lines += ["  " + summary(k, item, cat.currency) for item in items]
    if excluded and "servers" in kinds:
        lines.append(f"not bought in market {market} ({len(excluded)})")
        lines += [f"  {e.item:<26} {e.card}: {e.status} ({e.rule})" for e in excluded]
    return "\n".join(lines) + "\n"


def summary(kind: str, item: Any, currency: str) -> str:
    if kind == "cards":
        bf16 = item.tflops.bf16 or item.tflops.fp16 or item.tflops.fp32
        export = item.export_cn.status if item.export_cn else "unknown"
        return (
            f"{item.id:<22} {item.memory_gb:>5.0f} GB {item.memory_bandwidth_gbs:>6.0f} GB/s "
            f"{bf16:>7.1f} TFLOPS(bf16) {item.tdp_w:>5.0f} W  {item.peer_link:<15} "
            f"China: {export}"
        )
    if kind == "servers":
        r = item.price_range
        span = f" ({r.low:,.0f}-{r.high:,.0f})" if r is not None else ""
        label = " illustrative" if item.pricing.illustrative else ""
        return (
            f"{item.id:<26} {item.gpus}x {item.card:<18} {item.power_kw:>5.1f} kW "
            f"{item.rack_units:>2}U {'/'.join(item.cooling):<24} {item.price:>12,.0f} {currency}"
            f"{span}{label} {item.pricing.as_of}"
        )
    if kind == "colo_offers":
        return (
            f"{item.id:<28} {item.region:<14} {item.city:<12} {item.cooling:<12} "
            f"{item.rack_kw:>5.1f} kW x{item.racks_available:<3} "
            f"{item.rack_price_per_month:>8,.0f} {currency}/rack/mo PUE {item.pue}"
        )
    if kind in PART_KINDS:
        return f"{item.id:<26} {item.name:<60} {item.price:>12,.0f} {currency}"
    return (
        f"{item.id:<26} {item.gpus_per_instance}x {item.card:<18} "
        f"{item.price_per_hour:>8,.2f} {currency}/h  {item.region}"
    )


def item_text(kind: str, item_id: str, found: dict[str, Any]) -> str:
    """One item as `catalog show` prints it: where it was defined and patched, then every
    field as an indented tree."""
    lines = [f"{kind[:-1]} {item_id}  (defined at {found['defined_at']})"]
    lines += [
        f"  patched at {record['at']}: {', '.join(record['fields'])}"
        for record in found["patched_at"]
    ]
    lines += _tree(found["data"], indent=2)
    return "\n".join(lines) + "\n"


def _tree(data: Any, indent: int) -> list[str]:
    pad = " " * indent
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines += _tree(value, indent + 2)
        elif isinstance(value, list):
            lines.append(f"{pad}{key}: {', '.join(str(v) for v in value) or '-'}")
        else:
            lines.append(f"{pad}{key}: {value}")
    return lines
