"""Compile an expression: parse (`parse.py`), check (`check.py`), split into evaluation
units (`evaluate.py`), each knowing the fields it reads and, for the simple shapes, how to
compute it directly (`direct.py`).

A predicate is split at its top-level `&&` and then `||` so that each part is memoised on
its own fields; the checker's record of reads (with the node that read them) says which
fields each part reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import lark

from gpusolve.rules.bindings import Read
from gpusolve.rules.check import Checker
from gpusolve.rules.declarations import CelType
from gpusolve.rules.direct import ORDER_OPS, Shape
from gpusolve.rules.evaluate import Program, Unit
from gpusolve.rules.parse import (
    CelError,
    Node,
    Tree,
    literal_token,
    parse,
    string_value,
    subtree,
    unwrap,
)
from gpusolve.rules.scope import Path, ReadMode


def compile_predicate(
    text: str, variables: Mapping[str, CelType], assume_nonnull: frozenset[Path] = frozenset()
) -> Program:
    """Parse, check (must be a non-null bool) and split into memoised terms.

    `assume_nonnull`: fields known non-null because this runs only after a guard was true.
    """
    tree, checker, result = _check(text, variables, assume_nonnull)
    if result.kind not in ("bool", "dyn") or result.nullable:
        raise CelError(
            f"the expression must be true or false, but it gives {result.describe()}",
            hint="compare it with something, e.g. `... >= 80`",
        )
    terms: list[list[Unit]] = []
    for conjunct in _split(tree, "conditionaland"):
        term = []
        for disjunct in _split(conjunct, "conditionalor"):
            term.append(_unit(disjunct, _reads_in(checker, disjunct), want_bool=True))
        terms.append(term)
    return Program(text, terms, checker.facts(tree, True) | assume_nonnull)


def compile_value(
    text: str, variables: Mapping[str, CelType], assume_nonnull: frozenset[Path] = frozenset()
) -> tuple[Unit, CelType]:
    """A value expression (a message placeholder) and its static type."""
    tree, checker, result = _check(text, variables, assume_nonnull)
    return _unit(tree, _reads_in(checker, tree), want_bool=False), result


def _unit(tree: Node, reads: Sequence[Read], want_bool: bool) -> Unit:
    return Unit(reads, want_bool, fast_shape(tree, reads, want_bool), _collapsed(tree))


def _check(
    text: str, variables: Mapping[str, CelType], nonnull: frozenset[Path]
) -> tuple[Tree, Checker, CelType]:
    tree = parse(text)
    checker = Checker(variables, nonnull)
    return tree, checker, checker.check(tree)


def _split(tree: Node, op: str) -> list[Node]:
    """Operands of a top-level chain of `op` nodes (through parentheses); else [tree]."""
    inner = unwrap(tree)
    if not (isinstance(inner, lark.Tree) and inner.data == op and len(inner.children) == 2):
        return [tree]
    parts: list[Node] = []
    stack: list[Node] = [inner]
    while stack:
        cur = stack.pop()
        unwrapped = unwrap(cur)
        if (
            isinstance(unwrapped, lark.Tree)
            and unwrapped.data == op
            and len(unwrapped.children) == 2
        ):
            stack.append(unwrapped.children[1])
            stack.append(unwrapped.children[0])
        else:
            parts.append(cur)
    return parts


def _subtree_ids(tree: Node) -> set[int]:
    ids: set[int] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        ids.add(id(node))
        if isinstance(node, lark.Tree):
            stack.extend(node.children)
    return ids


def _reads_in(checker: Checker, subtree: Node) -> list[Read]:
    ids = _subtree_ids(subtree)
    modes: dict[Path, ReadMode] = {}
    for path, mode, nid in checker.reads:
        if nid in ids and modes.get(path) != "v":
            modes[path] = mode
    return sorted(modes.items())


_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication"}
    | {"unary"}
)


def _collapsed(node: Node) -> Node:
    """A copy without single-child pass-through levels (`relation` holding one `addition`
    holding one `multiplication`...): cel-python's methods for those just return their
    child's value, so skipping them changes nothing but the number of visits (about half)."""
    if not isinstance(node, lark.Tree):
        return node
    while node.data in _PASS_THROUGH and len(node.children) == 1:
        child = node.children[0]
        if not isinstance(child, lark.Tree):
            break
        node = child
    return lark.Tree(node.data, [_collapsed(c) for c in node.children], node.meta)


# --------------------------------------------------------------------------- direct shapes

_NO_VALUE = object()


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
        if not isinstance(value, int | float) or isinstance(value, bool):
            return _NO_VALUE
        value = -value
    return value


def fast_shape(tree: Node, reads: Sequence[Read], want_bool: bool) -> Shape | None:
    """The shape `direct.py` computes without cel-python, or None."""
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
        return Shape("field", single)
    if not want_bool or not isinstance(node, lark.Tree) or len(node.children) != 2:
        return None
    first, second = node.children
    if node.data == "unary" and subtree(first).data == "unary_not":
        inner = chain(second)
        return None if inner is None else Shape("not", inner)
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
        values = tuple(literal_value(c) for c in elements)
        if any(v is _NO_VALUE for v in values):
            return None
        return Shape("in", field, values)
    return _compare(op, chain(left), literal_value(right), chain(right), literal_value(left))


def _compare(
    op: str, left: Path | None, right_lit: object, right: Path | None, left_lit: object
) -> Shape | None:
    """`field OP literal` or `literal OP field`."""
    field, literal, flipped = left, right_lit, False
    if field is None or literal is _NO_VALUE:
        field, literal, flipped = right, left_lit, True
    if field is None or literal is _NO_VALUE:
        return None
    kind = op.removeprefix("relation_")
    if kind in ("eq", "ne"):
        return Shape(kind, field, (literal,))
    if kind not in ORDER_OPS:
        return None
    return Shape(kind, field, (literal,), flipped)
