"""Direct evaluation of the simplest terms, from the plain data, without cel-python.

Most terms are `field`, `!field`, `field OP literal` or `field in [literals]`. For those
shapes the result is computed directly with exactly the semantics of cel-python plus the
operator overrides (`operators.py`): numbers compare as doubles, `null` equals only
`null`, ordering a null is an error. A property test checks the two agree. Anything else
is left to cel-python (`fast_plan` gives None).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TypeGuard

import lark

from gpusolve.rules.bindings import Bindings, EvalFailure, Read, as_double
from gpusolve.rules.parse import Node, literal_token, string_value, subtree, unwrap
from gpusolve.rules.scope import Path

Direct = Callable[[Bindings], object]

_ORDER_OPS: dict[str, Callable[[float | str, float | str], bool]] = {
    "relation_lt": operator.lt,
    "relation_le": operator.le,
    "relation_gt": operator.gt,
    "relation_ge": operator.ge,
}
_NO_VALUE = object()


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


def literal_value(node: Node) -> object:
    """The Python value of a literal node, or _NO_VALUE."""
    node = unwrap(node)
    negate = False
    if (
        isinstance(node, lark.Tree)
        and node.data == "unary"
        and len(node.children) == 2
        and subtree(node.children[0]).data == "unary_neg"
    ):
        negate = True
        node = unwrap(node.children[1])
    tok = literal_token(node)
    if tok is None:
        return _NO_VALUE
    value: object
    text = str(tok.value)
    try:
        if tok.type in ("INT_LIT", "UINT_LIT"):
            digits = text.rstrip("uU")
            hexa = digits.lstrip("-").lower().startswith("0x")
            value = int(digits, 16) if hexa else int(digits)
        elif tok.type == "FLOAT_LIT":
            value = float(text)
        elif tok.type in ("STRING_LIT", "MLSTRING_LIT"):
            value = string_value(tok)
        elif tok.type == "BOOL_LIT":
            value = text == "true"
        elif tok.type == "NULL_LIT":
            value = None
        else:
            return _NO_VALUE
    except ValueError:  # leave anything unusual to cel-python
        return _NO_VALUE
    if negate:
        if not _is_number(value):
            return _NO_VALUE
        value = -value
    return value


def fast_plan(tree: Node, reads: Sequence[Read], want_bool: bool) -> Direct | None:
    """A direct evaluator for the simple shapes, or None."""
    known = {p for p, _ in reads}

    def chain(node: Node) -> Path | None:
        names: list[str] = []
        cur = unwrap(node)
        while isinstance(cur, lark.Tree) and cur.data == "member_dot":
            names.append(str(cur.children[1]))
            cur = unwrap(cur.children[0])
        if isinstance(cur, lark.Tree) and cur.data == "primary":
            cur = unwrap(cur.children[0])
        if isinstance(cur, lark.Tree) and cur.data == "ident":
            path = (str(cur.children[0]), *reversed(names))
            return path if path in known else None
        return None

    node = unwrap(tree)
    single = chain(node)
    if single is not None:
        if want_bool:
            return lambda b: _bool_or_fail(b.plain(single))
        return lambda b: b.plain(single)
    if not want_bool or not isinstance(node, lark.Tree) or len(node.children) != 2:
        return None
    first, second = node.children
    if node.data == "unary" and subtree(first).data == "unary_not":
        inner = chain(second)
        if inner is None:
            return None
        return lambda b: _not(_bool_or_fail(b.plain(inner)))
    if node.data != "relation":
        return None
    op = subtree(first).data
    left, right = subtree(first).children[0], second
    if op == "relation_in":
        field = chain(left)
        items = unwrap(right)
        if field is None or not (isinstance(items, lark.Tree) and items.data == "list_lit"):
            return None
        elements = subtree(items.children[0]).children if items.children else []
        values = [literal_value(c) for c in elements]
        if any(v is _NO_VALUE for v in values):
            return None
        return lambda b: any(plain_eq(b.plain(field), v) for v in values)
    return _compare(op, chain(left), literal_value(right), chain(right), literal_value(left))


def _compare(
    op: str, left: Path | None, right_lit: object, right: Path | None, left_lit: object
) -> Direct | None:
    """`field OP literal` or `literal OP field`."""
    field, literal, flipped = left, right_lit, False
    if field is None or literal is _NO_VALUE:
        field, literal, flipped = right, left_lit, True
    if field is None or literal is _NO_VALUE:
        return None
    path = field
    if op == "relation_eq":
        return lambda b: plain_eq(b.plain(path), literal)
    if op == "relation_ne":
        return lambda b: not plain_eq(b.plain(path), literal)
    compare = _ORDER_OPS.get(op)
    if compare is None:
        return None

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
