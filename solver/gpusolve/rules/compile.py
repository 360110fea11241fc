"""Compile an expression: parse (`parse.py`), check (`check.py`), split into evaluation
units (`evaluate.py`), each knowing the fields it reads.

A predicate is split at its top-level `&&` and then `||` so that each part is memoised on
its own fields; the checker's record of reads (with the node that read them) says which
fields each part reads.
"""

from __future__ import annotations

from collections.abc import Mapping

import lark

from gpusolve.rules.bindings import Read
from gpusolve.rules.check import Checker
from gpusolve.rules.declarations import CelType
from gpusolve.rules.evaluate import Program, Unit
from gpusolve.rules.parse import CelError, Node, Tree, parse, unwrap
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
            term.append(Unit(disjunct, _reads_in(checker, disjunct), want_bool=True))
        terms.append(term)
    return Program(text, tree, terms, checker.facts(tree, True) | assume_nonnull)


def compile_value(
    text: str, variables: Mapping[str, CelType], assume_nonnull: frozenset[Path] = frozenset()
) -> tuple[Unit, CelType]:
    """A value expression (a message placeholder) and its static type."""
    tree, checker, result = _check(text, variables, assume_nonnull)
    return Unit(tree, _reads_in(checker, tree), want_bool=False), result


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
