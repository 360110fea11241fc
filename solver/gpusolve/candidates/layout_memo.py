"""Layout searches shared within a block: the periods of a purchase schedule ask the same
search once per period.

A layout search (`estimate.search.search_layouts`) reads the workload's model, shape,
precision, deadline or throughput target, never how many runs it repeats (`runs` prices
hours, later): within `shared_layouts()`, a search asked again for the same workload (its
runs aside), hardware and rule parameters returns the first answer. The memo lives for the
block only, while every card and parameter object it is keyed by (by identity) is alive.
Below it, the command keeps searches between runs (`layout_cache.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields
from typing import Any

from gpusolve.candidates import layout_cache
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.search import SearchResult, search_layouts
from gpusolve.models.params import Params
from gpusolve.models.requirements import Workload

_MEMO: ContextVar[dict[tuple[Any, ...], SearchResult] | None] = ContextVar(
    "layout_memo", default=None
)


@contextmanager
def shared_layouts() -> Iterator[None]:
    token = _MEMO.set({})
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
    if key not in memo:
        memo[key] = _search(workload, hw, params, max_nodes, every_size)
    return memo[key]


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
