"""Layout searches shared within a block: the periods of a purchase schedule ask the same
search once per period.

A layout search (`estimate.search.search_layouts`) reads the workload's model, shape,
precision, deadline or throughput target, never how many runs it repeats (`runs` prices
hours, later): within `shared_layouts()`, a search asked again for the same workload (its
runs aside), hardware and rule parameters returns the first answer. The memo lives for the
block, or as long as a memo handed to `shared_layouts` (the re-planned draws of `plan
--risk`); each entry keeps alive the card and parameter objects it is keyed by (by
identity). Below it, the command keeps searches between runs (`layout_cache.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields
from typing import Any

from gpusolve.candidates import layout_cache
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.search import SearchResult, search_layouts
from gpusolve.models.params import Params
from gpusolve.models.requirements import Workload

# Key -> (the answer, the card and parameter objects the key names by identity): holding
# them keeps their ids from being reused by other objects while the entry lives, so a memo
# may outlive a block (`shared_layouts(memo)`), and an entry dropped takes its key along.
Memo = MutableMapping[tuple[Any, ...], tuple[SearchResult, object, object]]
_MEMO: ContextVar[Memo | None] = ContextVar("layout_memo", default=None)


@contextmanager
def shared_layouts(memo: Memo | None = None) -> Iterator[None]:
    """A block sharing layout searches; `memo`: one kept across blocks (the draws a
    process plans again one after another), else a new one for this block."""
    token = _MEMO.set({} if memo is None else memo)
    try:
        yield
    finally:
        _MEMO.reset(token)


def layouts(
    workload: Workload, hw: Hardware, params: Params, *, max_nodes: int, every_size: bool
) -> SearchResult:
    """`search_layouts`' answer, or the one it gave before for the same inputs within the
    block."""
    memo = _MEMO.get()
    if memo is None:
        return _search(workload, hw, params, max_nodes, every_size)
    shape = workload.model_dump_json(exclude={"runs"})
    hardware = (id(hw.card), *(getattr(hw, f.name) for f in fields(hw) if f.name != "card"))
    key = (shape, hardware, id(params), max_nodes, every_size)
    found = memo.get(key)
    if found is None:
        result = _search(workload, hw, params, max_nodes, every_size)
        found = memo[key] = (result, hw.card, params)
    return found[0]


def _search(
    workload: Workload, hw: Hardware, params: Params, max_nodes: int, every_size: bool
) -> SearchResult:
    """The search, or the command's earlier run's answer (`layout_cache`)."""
    return layout_cache.search(
        workload,
        hw,
        params,
        max_nodes,
        every_size,
        lambda: search_layouts(workload, hw, params, max_nodes=max_nodes, every_size=every_size),
    )
