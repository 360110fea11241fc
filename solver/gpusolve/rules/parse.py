"""Parse a CEL expression, with bounds, into cel-python's lark tree; helpers on that tree.

Parsing is cel-python's (`celpy`): its lark parser (`cache.py`) builds the tree. Bounds
come before and after it: at most `MAX_EXPR_CHARS` characters, bracket nesting at most
`MAX_NESTING`, runs of unary operators at most `MAX_UNARY_RUN`; then tree depth at most
`MAX_TREE_DEPTH` and at most `MAX_TREE_NODES` nodes. A pathologically deep expression is an
input error (`CelError`), never a RecursionError or a hang. Trees are never modified, so
each text is parsed once per process, and across processes the trees of the texts a run
used are kept on disk (`cache.py`).
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING

import lark

from gpusolve.rules.celerror import CelError as CelError

if TYPE_CHECKING:
    import celpy

MAX_EXPR_CHARS = 4000
MAX_NESTING = 32
MAX_UNARY_RUN = 8
MAX_TREE_DEPTH = 300
MAX_TREE_NODES = 20_000
_PARSED_MAX = 4096
CELPY_RECURSION_LIMIT = 2500  # what `celpy.Environment()` sets (cel-python 0.5)

Tree = lark.Tree[lark.Token]
Node = lark.Tree[lark.Token] | lark.Token


@cache
def environment() -> celpy.Environment:
    """cel-python's environment on the seeded parser (built once per process)."""
    import celpy

    from gpusolve.rules.cache import seed_parser

    before = sys.getrecursionlimit()
    seed_parser()
    env = celpy.Environment()  # reuses the seeded lark parser; sets the limit to 2500
    sys.setrecursionlimit(max(before, sys.getrecursionlimit()))
    return env


def raise_recursion_limit() -> None:
    """The recursion limit cel-python's environment sets (never lowered), for evaluating
    without one (`evaluate.base_activation`)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), CELPY_RECURSION_LIMIT))


_PARSED: dict[str, Tree] = {}


def parse(text: str) -> Tree:
    """Parse with bounds; raise CelError for syntax errors and oversize expressions."""
    from gpusolve.rules.cache import TREES

    tree = _PARSED.get(text)
    if tree is None:
        tree = TREES.lookup(text)
    if tree is None:
        tree = _parse(text)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = tree
        TREES.remember(text, tree)
    return tree


def _parse(text: str) -> Tree:
    from celpy.celparser import CELParseError

    _prescan(text)
    try:
        tree: Tree = environment().compile(text)
    except CELParseError as exc:
        line, col = getattr(exc, "line", None), getattr(exc, "column", None)
        raise CelError(
            f"CEL syntax error: {_near(text, line, col)}",
            line,
            col,
            hint="check operators (&&, ||, ==, !), quotes and parentheses",
        ) from None
    except RecursionError:  # pragma: no cover - the prescan bounds nesting
        raise CelError("expression nests too deeply", hint="simplify") from None
    depth, nodes = _measure(tree)
    if depth > MAX_TREE_DEPTH or nodes > MAX_TREE_NODES:
        raise CelError(
            f"expression is too deeply nested or too long ({depth} levels, {nodes} nodes; "
            f"limits {MAX_TREE_DEPTH} and {MAX_TREE_NODES})",
            hint="split the condition into several rules",
        )
    return tree


def _prescan(text: str) -> None:
    """The bounds that must hold before the (recursive) parser sees the text."""
    if len(text) > MAX_EXPR_CHARS:
        raise CelError(
            f"expression is {len(text):,} characters; the limit is {MAX_EXPR_CHARS:,}",
            hint="split the condition into several rules",
        )
    depth = 0
    unary = 0
    quote: str | None = None
    i = 0
    line, col = 1, 0
    while i < len(text):
        ch = text[i]
        col += 1
        if ch == "\n":
            line, col = line + 1, 0
        if quote is not None:
            if ch == "\\":
                i += 2
                col += 1
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
            if depth > MAX_NESTING:
                raise CelError(
                    f"brackets nested more than {MAX_NESTING} deep", line, col, hint="simplify"
                )
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if quote is None and ch in "!-":
            unary += 1
            if unary > MAX_UNARY_RUN:
                raise CelError(
                    f"more than {MAX_UNARY_RUN} '!' or '-' in a row", line, col, hint="simplify"
                )
        elif not ch.isspace():
            unary = 0
        i += 1


def _near(text: str, line: int | None, col: int | None) -> str:
    if line is None or col is None:
        return "cannot read the expression"
    lines = text.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    rest = source[col - 1 :].strip()
    if not rest and line >= len(lines):
        return "the expression ends too early"
    return f"unexpected {rest[:20]!r}"


def _measure(tree: Tree) -> tuple[int, int]:
    """Depth and node count, iteratively (no recursion on untrusted shapes)."""
    stack: list[tuple[Node, int]] = [(tree, 1)]
    deepest = 0
    nodes = 0
    while stack:
        node, d = stack.pop()
        nodes += 1
        deepest = max(deepest, d)
        if isinstance(node, lark.Tree):
            stack.extend((c, d + 1) for c in node.children)
    return deepest, nodes


# --------------------------------------------------------------------------- tree helpers

_WRAPPERS = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication"}
    | {"unary", "member", "primary"}
)


def unwrap(node: Node) -> Node:
    """The node under single-child grammar levels and parentheses."""
    while isinstance(node, lark.Tree):
        if (node.data in _WRAPPERS and len(node.children) == 1) or node.data == "paren_expr":
            node = node.children[0]
        else:
            break
    return node


def subtree(node: Node) -> Tree:
    """A child the grammar makes a tree (an operator node, an argument list)."""
    if not isinstance(node, lark.Tree):
        raise CelError(f"unexpected token {node!s}", node.line, node.column)
    return node


def token(node: Node) -> lark.Token:
    """A child the grammar makes a token (a literal, a name)."""
    if isinstance(node, lark.Tree):
        raise error_at(node, f"unexpected '{node.data}'")
    return node


def position(node: Node) -> tuple[int | None, int | None]:
    if isinstance(node, lark.Token):
        return node.line, node.column
    meta = node.meta
    if not meta.empty:
        return meta.line, meta.column
    return None, None


def error_at(node: Node, message: str, hint: str = "") -> CelError:
    line, col = position(node)
    return CelError(message, line, col, hint)


def literal_token(node: Node) -> lark.Token | None:
    """The token of a literal (under wrappers), else None."""
    node = unwrap(node)
    if isinstance(node, lark.Tree) and node.data == "literal":
        return token(node.children[0])
    return None


def string_literal(node: Node) -> str | None:
    """The value of a quoted string literal, else None."""
    tok = literal_token(node)
    if tok is not None and tok.type in ("STRING_LIT", "MLSTRING_LIT"):
        return string_value(tok)
    return None


def string_value(tok: lark.Token) -> str:
    from celpy.evaluation import celstr

    return str(celstr(tok))


def is_null_literal(node: Node) -> bool:
    tok = literal_token(node)
    return tok is not None and tok.type == "NULL_LIT"
