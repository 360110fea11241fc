"""What `gpusolve catalog list/show` report: items by kind, and one item with its origin."""

from __future__ import annotations

import difflib
from typing import Any

from gpusolve.load.catalog import KINDS, LoadedCatalog


def list_json(loaded: LoadedCatalog, kinds: list[str], one_kind: bool) -> Any:
    """Every field of every item of these kinds; one kind asked for is a bare list."""
    cat = loaded.catalog
    out = {k: [v.model_dump(mode="json") for v in getattr(cat, k).values()] for k in kinds}
    return out[kinds[0]] if one_kind else {"currency": cat.currency, **out}


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
