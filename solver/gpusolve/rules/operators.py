"""CEL's comparison and arithmetic across int and double, and `== null` on any value.

cel-python 0.5 raises "no such overload" for `double == null` and for `int < double`; the
CEL specification prescribes heterogeneous numeric comparison, so these operators are
supplied to cel-python as overrides: numbers compare and combine as doubles, `null`
equals only `null`, ordering a null is an error, a non-finite result is an error, and an
operand that is already an evaluation error is the result (as in CEL).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, TypeGuard

from celpy import celtypes as ct
from celpy import evaluation as ev

from gpusolve.rules.bindings import as_double

Result = ev.Result
Binary = Callable[[Result, Result], Result]
_NUMERIC = (ct.IntType, ct.UintType, ct.DoubleType)


def _is_num(v: Result) -> TypeGuard[ct.IntType | ct.UintType | ct.DoubleType]:
    return isinstance(v, _NUMERIC)


def equal(a: Result, b: Result) -> Result:
    if a is None or b is None:
        return ct.BoolType(a is None and b is None)
    if _is_num(a) and _is_num(b):
        return ct.BoolType(as_double(a) == as_double(b))
    if isinstance(a, ct.ListType) and isinstance(b, ct.ListType):
        return ct.BoolType(len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True)))
    return ev.bool_eq(a, b)


def _not_equal(a: Result, b: Result) -> ct.BoolType:
    return ct.BoolType(not equal(a, b))


def _order(op: Callable[[Any, Any], bool]) -> Binary:  # any CEL values that order
    def compare(a: Result, b: Result) -> Result:
        if _is_num(a) and _is_num(b):
            return ct.BoolType(op(as_double(a), as_double(b)))
        if a is None or b is None:
            raise TypeError("null has no order (guard the field with `!= null`)")
        return ct.BoolType(op(a, b))

    return compare


def _arith(op: Callable[[float, float], float], base: Callable[[Result, Result], Result]) -> Binary:
    def apply(a: Result, b: Result) -> Result:
        if (
            _is_num(a)
            and _is_num(b)
            and (isinstance(a, ct.DoubleType) or isinstance(b, ct.DoubleType))
        ):
            if op is operator.truediv and as_double(b) == 0.0:
                raise ZeroDivisionError("division by zero")
            result = op(as_double(a), as_double(b))
            if not math.isfinite(result):
                raise ZeroDivisionError("result is not a finite number")
            return ct.DoubleType(result)
        return base(a, b)

    return apply


def _contained(a: Result, container: Result) -> Result:
    if isinstance(container, ct.ListType):
        return ct.BoolType(any(equal(a, x) for x in container))
    return ev.operator_in(a, container)


def _propagate(func: Binary) -> Binary:
    """An operand that is already an evaluation error is the result (as in CEL)."""

    def wrapped(a: Result, b: Result) -> Result:
        if isinstance(a, ev.CELEvalError):
            return a
        if isinstance(b, ev.CELEvalError):
            return b
        return func(a, b)

    return wrapped


def overrides() -> dict[str, Binary]:
    """The operator table handed to cel-python's `Environment.program(functions=...)`."""
    table: dict[str, Binary] = {
        "_==_": equal,
        "_!=_": _not_equal,
        "_<_": _order(operator.lt),
        "_<=_": _order(operator.le),
        "_>_": _order(operator.gt),
        "_>=_": _order(operator.ge),
        "_+_": _arith(operator.add, operator.add),
        "_-_": _arith(operator.sub, operator.sub),
        "_*_": _arith(operator.mul, operator.mul),
        "_/_": _arith(operator.truediv, operator.truediv),
        "_in_": _contained,
    }
    return {name: _propagate(func) for name, func in table.items()}
