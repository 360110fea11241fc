"""What an evaluation reads and what a failed one gives: shared by the evaluator
(`evaluate.py`), its operators (`operators.py`) and the direct path for simple terms
(`direct.py`)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusolve.rules.declarations import Path, ReadMode
from gpusolve.rules.environment import Facts

if TYPE_CHECKING:
    from gpusolve.rules.environment import Value

Read = tuple[Path, ReadMode]


@dataclass(frozen=True)
class EvalFailure:
    """An evaluation error (rare after the static check: e.g. division by zero)."""

    message: str

    def __bool__(self) -> bool:  # never mistaken for true
        return False


def as_double(value: int | float) -> float:
    """A number as CEL compares it, a double: an integer beyond the double range (no literal
    can be, `check.py` bounds them; an integer product can) is the infinity of its sign,
    never an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


class Bindings:
    """The variables of one evaluation, drawn from several Facts (by root variable)."""

    __slots__ = ("_by_root",)

    def __init__(self, *facts: Facts, base: Mapping[str, Facts] | None = None) -> None:
        self._by_root: dict[str, Facts] = dict(base) if base else {}
        for f in facts:
            self._by_root.update(f.owners)

    def key(self, path: Path, mode: ReadMode) -> Hashable:
        owner = self._by_root[path[0]]
        return owner.key(path) if mode == "v" else owner.is_null(path)

    def plain(self, path: Path) -> object:
        return self._by_root[path[0]].walk(path)

    def context(self) -> dict[str, Value]:
        return {name: f.variables[name] for name, f in self._by_root.items()}
