"""What `gpusolve catalog list/show` report: items by kind, and one item with its origin."""

from __future__ import annotations

import difflib
from typing import Any

from gpusolve.candidates.market import MarketView, exclusions
from gpusolve.load.catalog import KINDS, LoadedCatalog
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Excluded


def in_market(catalog: Catalog, market: str | None) -> tuple[Catalog, list[Excluded]]:
    """The catalogue as a buyer in `market` sees it: servers it cannot buy (and cards with
    no purchase allowed) left out, with the reason for each server. None: everything."""
    if market is None:
        return catalog, []
    excluded = exclusions(catalog, MarketView(market, "stated on the command line (--market)"))
    out = {e.item for e in excluded}
    servers = {k: s for k, s in catalog.servers.items() if k not in out}
    blocked_cards = {e.card for e in excluded}
    cards = {k: c for k, c in catalog.cards.items() if k not in blocked_cards}
    return catalog.model_copy(update={"servers": servers, "cards": cards}), excluded


def list_json(loaded: LoadedCatalog, kinds: list[str], market: str | None = None) -> Any:
    """Every field of every item of these kinds, under each kind's name. With a market,
    only what a buyer there can buy, and what was left out, why."""
    cat, excluded = in_market(loaded.catalog, market)
    out = {k: [v.model_dump(mode="json") for v in getattr(cat, k).values()] for k in kinds}
    head: dict[str, Any] = {"currency": cat.currency}
    if market is not None:
        head["market"] = market
        head["excluded"] = [e.model_dump(mode="json") for e in excluded]
    return {**head, **out}


def find_item(loaded: LoadedCatalog, item_id: str) -> tuple[str, dict[str, Any]]:
    """The item's kind, and `defined_at` (file:line), `patched_at` and its fields (`data`);
    LookupError names the closest ids."""
    for kind in KINDS:
        item = getattr(loaded.catalog, kind).get(item_id)
        if item is None:
            continue
        file, line = loaded.origins.get(item_id, ("?", None))
        patched = [{"at": r.at, "fields": list(r.fields)} for r in loaded.patches.get(item_id, [])]
        found = {
            "defined_at": f"{file}:{line}",
            "patched_at": patched,
            "data": item.model_dump(mode="json"),
        }
        return kind, found
    known = [i for k in KINDS for i in getattr(loaded.catalog, k)]
    close = difflib.get_close_matches(item_id, known, n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise LookupError(f"no catalogue item with id {item_id!r}.{hint}")
