"""Direct evaluation of the simplest terms, from the plain data, without cel-python.

Most terms are `field`, `!field`, `field OP literal` or `field in [literals]`. For those
shapes (a `Shape`, found in the tree by `compile.py`) the result is computed directly with
exactly the semantics of cel-python plus the operator overrides (`operators.py`): numbers
compare as doubles, `null` equals only `null`, ordering a null is an error. A property test
checks the two agree. A shape is plain data, kept with its compiled expression between runs
(`compiled.py`); anything else is left to cel-python.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeGuard

from gpusolve.rules.bindings import Bindings, EvalFailure, as_double
from gpusolve.rules.declarations import Path

Direct = Callable[[Bindings], object]

ORDER_OPS: dict[str, Callable[[float | str, float | str], bool]] = {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


@dataclass(frozen=True)
class Shape:
    """A term computed directly. `kind`: "field" (the field's value, or its truth where a
    bool is wanted), "not" (the negated truth), "in" (equal to one of `values`), "eq" or
    "ne" (against `values[0]`), or an order in `ORDER_OPS` (the field against `values[0]`,
    or `values[0]` against the field when `flipped`)."""

    kind: str
    path: Path
    values: tuple[object, ...] = ()
    flipped: bool = False


def _is_number(v: object) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool)


def plain_eq(a: object, b: object) -> bool:
    """CEL `==` (with the overrides) on plain data."""
    if a is None or b is None:
        return a is None and b is None
    if (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and _is_number(a)
        and _is_number(b)
    ):
        return as_double(a) == as_double(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def direct(shape: Shape, want_bool: bool) -> Direct:
    """The function that computes `shape` from an evaluation's plain data."""
    path, values = shape.path, shape.values
    if shape.kind == "field":
        if want_bool:
            return lambda b: _bool_or_fail(b.plain(path))
        return lambda b: b.plain(path)
    if shape.kind == "not":
        return lambda b: _not(_bool_or_fail(b.plain(path)))
    if shape.kind == "in":
        return lambda b: any(plain_eq(b.plain(path), v) for v in values)
    literal = values[0]
    if shape.kind == "eq":
        return lambda b: plain_eq(b.plain(path), literal)
    if shape.kind == "ne":
        return lambda b: not plain_eq(b.plain(path), literal)
    compare = ORDER_OPS[shape.kind]
    flipped = shape.flipped

    def ordered(b: Bindings) -> object:
        value = b.plain(path)
        x, y = (literal, value) if flipped else (value, literal)
        if _is_number(x) and _is_number(y):
            return compare(as_double(x), as_double(y))
        if isinstance(x, str) and isinstance(y, str):
            return compare(x, y)
        return EvalFailure("null has no order (guard the field with `!= null`)")

    return ordered


def _bool_or_fail(value: object) -> object:
    if isinstance(value, bool):
        return value
    return EvalFailure(f"expected true or false, got {value!r}")


def _not(value: object) -> object:
    return (not value) if isinstance(value, bool) else value
