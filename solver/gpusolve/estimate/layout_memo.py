"""Layout searches shared within a block: the periods of a purchase schedule ask the same
search once per period.

A layout search reads the workload's model, shape, precision, deadline or throughput
target, never how many runs it repeats (`runs` prices hours, later): within
`shared_layouts()`, a search asked again for the same workload (its runs aside), hardware
and rule parameters returns the first answer. The memo lives for the block only, while
every card and parameter object it is keyed by (by identity) is alive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")

_MEMO: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar("layout_memo", default=None)


@contextmanager
def shared_layouts() -> Iterator[None]:
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def remembered(
    workload: Any, hw: Any, params: Any, options: tuple[Any, ...], search: Callable[[], T]
) -> T:
    """`search()`'s answer, or the one given before for the same inputs within the block."""
    memo = _MEMO.get()
    if memo is None:
        return search()
    shape = workload.model_dump_json(exclude={"runs"})
    hardware = (id(hw.card), *(getattr(hw, f.name) for f in fields(hw) if f.name != "card"))
    key = (shape, hardware, id(params), options)
    if key not in memo:
        memo[key] = search()
    found: T = memo[key]
    return found
