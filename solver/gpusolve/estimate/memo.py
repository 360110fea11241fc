"""Results memoised by an object's identity for the searches, which ask about the same
workload or hardware thousands of times: hashing such an object field by field (or at
all, where it holds lists) costs more than the lookup saves. Each entry keeps its object
alive, so the id cannot be reused for another one while the entry stands; a full cache is
emptied whole (the searches' working set is far smaller)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeVar

V = TypeVar("V")

Cache = dict[Hashable, tuple[Any, Any]]


def cached(cache: Cache, key: Hashable, owner: object) -> Any:
    """The value kept under `key` for this very `owner`, else None."""
    hit = cache.get(key)
    return hit[1] if hit is not None and hit[0] is owner else None


def keep(cache: Cache, key: Hashable, owner: object, value: V, limit: int) -> V:
    """`value` kept under `key` for `owner`, the cache emptied first when it holds `limit`."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = (owner, value)
    return value
