"""CEL expressions for rules: bounded parsing, a static check, memoised evaluation.

Parsing and evaluation are cel-python's (`celpy`): its lark parser builds the tree and
its tree-walking `Evaluator` runs it. Nothing is handed to Python's `eval`/`exec`
(cel-python's optional transpiler is not used). On top of cel-python this module adds:

- **Bounds before parsing**: at most `MAX_EXPR_CHARS` characters, bracket nesting at
  most `MAX_NESTING`, runs of unary operators at most `MAX_UNARY_RUN`; after parsing,
  tree depth at most `MAX_TREE_DEPTH` and at most `MAX_TREE_NODES` nodes. A
  pathologically deep expression is an input error, never a RecursionError or a hang.
- **A static check** against the declared environment (`environment.py`): every
  variable, field and method is known; comparisons and arithmetic have compatible types;
  string literals compared with an enumerated field are among its values; a field that
  may be null is used in an ordering comparison or arithmetic only behind a guard
  (`x != null && x > 3`, `x == null || x > 3`, `x != null ? x : 0`); the whole predicate
  is a bool. The functions available are `size`, `int`, `double`, `string`, the
  string methods `contains`, `startsWith`, `endsWith`, and the macros `all`, `exists`,
  `exists_one`, `map`, `filter` over lists. Regular expressions (`matches`), `has()`,
  timestamps and message construction are not available, and comprehensions nest at
  most `MAX_MACRO_NESTING` deep, so evaluation is bounded by the size of the data.
- **Numeric comparisons across int and double**, and `== null` / `!= null` on any
  value (cel-python 0.5 raises "no such overload" for `double == null` and for
  `int < double`); these are supplied as cel-python operator overrides, as the CEL
  specification's heterogeneous numeric comparison prescribes.
- **Memoised evaluation**: a top-level conjunction `a && b && c` is evaluated term by
  term (false stops, an error is kept only if no term is false, as CEL's `&&` does),
  and each term's result is cached on the values of the fields it reads. Rules mostly
  read a handful of fields, so a whole catalogue is checked with few real evaluations.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import math
import operator
import os
import pathlib
import pickle
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lark

from gpusolve.rules.environment import BOOL, DYN, NULL, NUM, STR, CelType, Facts, list_of

MAX_EXPR_CHARS = 4000
MAX_NESTING = 32
MAX_UNARY_RUN = 8
MAX_TREE_DEPTH = 300
MAX_TREE_NODES = 20_000
MAX_MEMO = 50_000
MAX_MACRO_NESTING = 2

MACROS = ("all", "exists", "exists_one", "map", "filter")
STRING_METHODS = ("contains", "startsWith", "endsWith")
FUNCTIONS = ("size", "int", "double", "string")


class CelError(Exception):
    """A problem with one expression: position is 1-based within the expression text."""

    def __init__(
        self, message: str, line: int | None = None, column: int | None = None, hint: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint

    def where(self) -> str:
        if self.column is None:
            return ""
        if self.line and self.line > 1:
            return f" (expression line {self.line}, column {self.column})"
        return f" (at column {self.column} of the expression)"


@dataclass(frozen=True)
class EvalFailure:
    """An evaluation error (rare after the static check: e.g. division by zero)."""

    message: str

    def __bool__(self) -> bool:  # never mistaken for true
        return False


# --------------------------------------------------------------------------- celpy glue

_CEL: dict[str, Any] = {}


def _celpy() -> dict[str, Any]:
    """cel-python's environment and a base activation with our operator overrides (once)."""
    if not _CEL:
        import celpy
        from celpy import celtypes as ct
        from celpy import evaluation as ev
        from celpy.celparser import CELParseError

        before = sys.getrecursionlimit()
        seed_parser()
        env = celpy.Environment()  # reuses the seeded lark parser; sets the limit to 2500
        sys.setrecursionlimit(max(before, sys.getrecursionlimit()))
        runner = env.program(env.compile("true"), functions=_overrides(ct, ev))
        _CEL.update(
            env=env,
            base=runner.new_activation(),
            Evaluator=ev.Evaluator,
            CELEvalError=ev.CELEvalError,
            CELParseError=CELParseError,
            ct=ct,
            celstr=ev.celstr,
        )
    return _CEL


def parser_cache_file() -> pathlib.Path | None:
    """A per-user file for Lark's parse tables, or None when no private cache dir exists.

    Lark's cache is a pickle, so it lives in the user's own cache directory (created 0700),
    never in a shared temporary directory.
    """
    import lark

    root = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    root = root / "gpusolve"
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(root, os.W_OK):
        return None
    return root / f"cel-lark-{lark.__version__}.cache"


def seed_parser() -> None:
    """Build cel-python's shared parser ourselves, with Lark's table cache switched on.

    cel-python builds the same LALR tables from its grammar in every process (the larger
    part of `gpusolve plan`'s start-up); Lark can cache them, keyed by grammar, options
    and Lark version. The options below are cel-python 0.5's own (pinned in pyproject);
    a test checks that the seeded parser parses exactly as cel-python's does.
    """
    from celpy.celparser import CELParser
    from lark import Lark

    if CELParser.CEL_PARSER is not None:
        return
    import celpy.celparser

    cache = parser_cache_file()
    grammar = (pathlib.Path(celpy.celparser.__file__).parent / "cel.lark").read_text()
    CELParser.CEL_PARSER = Lark(
        grammar,
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        cache=str(cache) if cache else False,
    )


def _overrides(ct: Any, ev: Any) -> dict[str, Callable[..., Any]]:
    numeric = (ct.IntType, ct.UintType, ct.DoubleType)

    def is_num(v: Any) -> bool:
        return isinstance(v, numeric)

    def eq(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return ct.BoolType(a is None and b is None)
        if is_num(a) and is_num(b):
            return ct.BoolType(float(a) == float(b))
        if isinstance(a, ct.ListType) and isinstance(b, ct.ListType):
            return ct.BoolType(
                len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b, strict=True))
            )
        return ev.bool_eq(a, b)

    def ne(a: Any, b: Any) -> Any:
        return ct.BoolType(not eq(a, b))

    def order(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
        def compare(a: Any, b: Any) -> Any:
            if is_num(a) and is_num(b):
                return ct.BoolType(op(float(a), float(b)))
            if a is None or b is None:
                raise TypeError("null has no order (guard the field with `!= null`)")
            return ct.BoolType(op(a, b))

        return compare

    def arith(op: Callable[[Any, Any], Any], base: Callable[[Any, Any], Any]) -> Callable[..., Any]:
        def apply(a: Any, b: Any) -> Any:
            if (
                is_num(a)
                and is_num(b)
                and (isinstance(a, ct.DoubleType) or isinstance(b, ct.DoubleType))
            ):
                if op is operator.truediv and float(b) == 0.0:
                    raise ZeroDivisionError("division by zero")
                result = op(float(a), float(b))
                if not math.isfinite(result):
                    raise ZeroDivisionError("result is not a finite number")
                return ct.DoubleType(result)
            return base(a, b)

        return apply

    def contained(a: Any, container: Any) -> Any:
        if isinstance(container, ct.ListType):
            return ct.BoolType(any(eq(a, x) for x in container))
        return ev.operator_in(a, container)

    def propagate(func: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """An operand that is already an evaluation error is the result (as in CEL)."""

        def wrapped(a: Any, b: Any) -> Any:
            if isinstance(a, ev.CELEvalError):
                return a
            if isinstance(b, ev.CELEvalError):
                return b
            return func(a, b)

        return wrapped

    table: dict[str, Callable[[Any, Any], Any]] = {
        "_==_": eq,
        "_!=_": ne,
        "_<_": order(operator.lt),
        "_<=_": order(operator.le),
        "_>_": order(operator.gt),
        "_>=_": order(operator.ge),
        "_+_": arith(operator.add, operator.add),
        "_-_": arith(operator.sub, operator.sub),
        "_*_": arith(operator.mul, operator.mul),
        "_/_": arith(operator.truediv, operator.truediv),
        "_in_": contained,
    }
    return {name: propagate(func) for name, func in table.items()}


# --------------------------------------------------------------------------- bounds + parse


def _prescan(text: str) -> None:
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


_PARSED: dict[str, lark.Tree[Any]] = {}
_PARSED_MAX = 4096
# Trees kept on disk (`_TreeCache`): `gpusolve plan` with the shipped rules reads 73.
_CACHE_MAX = 256


def parse(text: str) -> lark.Tree[Any]:
    """Parse with bounds; raise CelError for syntax errors and oversize expressions.

    Trees are cached by text for the life of the process (they are never modified), so
    loading the same rule files again costs no parsing; and across processes in the
    private per-user cache (`_TreeCache`), so `gpusolve plan` does not re-parse the shipped
    rules on every run (0.1 s of its start-up).
    """
    tree = _PARSED.get(text)
    if tree is None:
        tree = _TREES.lookup(text)
    if tree is None:
        tree = _parse(text)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = tree
        _TREES.remember(text, tree)
    return tree


class _TreeCache:
    """Parsed trees of expressions that passed every check, pickled in the user's private
    cache directory (like Lark's table cache: never in a shared temporary directory), keyed
    by the Lark and cel-python versions that built them. Written once at exit, atomically.

    At most `_CACHE_MAX` trees, the most recently used kept: reading the file is a cost on
    every start-up, and without the bound it grew with every expression ever parsed (a
    developer's cache reached 4 MB after test runs, 0.2 s of each `gpusolve plan`)."""

    def __init__(self) -> None:
        self.new: dict[str, lark.Tree[Any]] = {}
        self.used: dict[str, None] = {}  # texts found on disk this run, in order
        self._known: dict[str, lark.Tree[Any]] | None = None
        self._registered = False

    @property
    def known(self) -> dict[str, lark.Tree[Any]]:
        """The trees on disk, read once per process."""
        if self._known is None:
            self._known = self.load()
            if len(self._known) > _CACHE_MAX:
                self._save_at_exit()  # shrink it even if nothing new is parsed
        return self._known

    def lookup(self, text: str) -> lark.Tree[Any] | None:
        tree = self.known.get(text)
        if tree is not None:
            self.used[text] = None
        return tree

    def path(self) -> pathlib.Path | None:
        tables = parser_cache_file()
        if tables is None:
            return None
        from importlib.metadata import version

        return tables.with_name(f"cel-trees-{tables.stem}-celpy-{version('cel-python')}.pickle")

    def load(self) -> dict[str, lark.Tree[Any]]:
        path = self.path()
        if path is None or not path.is_file():
            return {}
        try:
            with path.open("rb") as handle:
                trees = pickle.load(handle)
        except Exception:  # a stale or truncated cache is rebuilt, never fatal
            return {}
        return trees if isinstance(trees, dict) else {}

    def remember(self, text: str, tree: lark.Tree[Any]) -> None:
        self._save_at_exit()
        self.new[text] = tree

    def _save_at_exit(self) -> None:
        if not self._registered:
            self._registered = True
            atexit.register(self.save)

    def save(self) -> None:
        path = self.path()
        if path is None or not (self.new or len(self.known) > _CACHE_MAX):
            return
        from gpusolve.atomic import write_bytes_atomic

        # Least recently used first: trees this run did not touch, then those it read,
        # then those it parsed; the oldest go when there are too many.
        recent = {text: self.known[text] for text in self.used} | self.new
        merged = {text: tree for text, tree in self.known.items() if text not in recent}
        merged |= recent
        if len(merged) > _CACHE_MAX:
            merged = dict(list(merged.items())[-_CACHE_MAX:])
        # A cache is optional: failing to write it never fails the run.
        with contextlib.suppress(OSError, pickle.PicklingError, RecursionError):
            write_bytes_atomic(path, pickle.dumps(merged, protocol=pickle.HIGHEST_PROTOCOL))


_TREES = _TreeCache()


def _parse(text: str) -> lark.Tree[Any]:
    _prescan(text)
    cel = _celpy()
    try:
        tree: lark.Tree[Any] = cel["env"].compile(text)
    except cel["CELParseError"] as exc:
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


def _near(text: str, line: int | None, col: int | None) -> str:
    if line is None or col is None:
        return "cannot read the expression"
    lines = text.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    rest = source[col - 1 :].strip()
    if not rest and line >= len(lines):
        return "the expression ends too early"
    return f"unexpected {rest[:20]!r}"


def _measure(tree: lark.Tree[Any]) -> tuple[int, int]:
    """Depth and node count, iteratively (no recursion on untrusted shapes)."""
    stack: list[tuple[Any, int]] = [(tree, 1)]
    deepest = 0
    nodes = 0
    while stack:
        node, d = stack.pop()
        nodes += 1
        deepest = max(deepest, d)
        if isinstance(node, lark.Tree):
            stack.extend((c, d + 1) for c in node.children)
    return deepest, nodes


def _pos(node: Any) -> tuple[int | None, int | None]:
    if isinstance(node, lark.Token):
        return node.line, node.column
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    return None, None


# --------------------------------------------------------------------------- static check

_WRAPPERS = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication"}
    | {"unary", "member", "primary"}
)


def _unwrap(node: Any) -> Any:
    while isinstance(node, lark.Tree):
        if (node.data in _WRAPPERS and len(node.children) == 1) or node.data == "paren_expr":
            node = node.children[0]
        else:
            break
    return node


Path = tuple[str, ...]


class _Checker:
    def __init__(
        self, variables: Mapping[str, CelType], nonnull: frozenset[Path] = frozenset()
    ) -> None:
        self.variables = dict(variables)
        self.locals: dict[str, tuple[CelType, str]] = {}
        self.nonnull: frozenset[Path] = nonnull
        # (path rooted at a variable, "v" value or "n" null-test only, id(node))
        self.reads: list[tuple[Path, str, int]] = []
        self._serial = 0
        self.macro_depth = 0

    # -- helpers
    def fail(self, node: Any, message: str, hint: str = "") -> CelError:
        line, col = _pos(node)
        return CelError(message, line, col, hint)

    def narrowed(self, extra: frozenset[Path]) -> _Narrow:
        return _Narrow(self, extra)

    def literal_string(self, node: Any) -> str | None:
        node = _unwrap(node)
        if isinstance(node, lark.Tree) and node.data == "literal":
            tok: Any = node.children[0]
            if tok.type in ("STRING_LIT", "MLSTRING_LIT"):
                return str(_celpy()["celstr"](tok))
        return None

    def chain(self, node: Any) -> list[tuple[str, Any]] | None:
        """[(name, node)...] root first, for a pure `a.b.c` selection; else None."""
        names: list[tuple[str, Any]] = []
        cur = _unwrap(node)
        while isinstance(cur, lark.Tree):
            if cur.data == "member_dot":
                names.append((str(cur.children[1]), cur))
                cur = _unwrap(cur.children[0])
                continue
            if cur.data == "ident":
                names.append((str(cur.children[0]), cur))
                names.reverse()
                return names
            return None
        return None

    def path_of(self, node: Any) -> Path | None:
        """The narrowing key of a selection: rooted at a variable or a comprehension local."""
        links = self.chain(node)
        if links is None:
            return None
        root = links[0][0]
        if root in self.locals:
            return (self.locals[root][1], *(n for n, _ in links[1:]))
        if root in self.variables:
            return tuple(n for n, _ in links)
        return None

    def facts(self, node: Any, positive: bool) -> frozenset[Path]:
        """Paths known non-null when `node` evaluates to `positive`."""
        node = _unwrap(node)
        if not isinstance(node, lark.Tree):
            return frozenset()
        if (
            node.data == "unary"
            and len(node.children) == 2
            and node.children[0].data == "unary_not"
        ):
            return self.facts(node.children[1], not positive)
        if node.data == "conditionaland" and len(node.children) == 2 and positive:
            return self.facts(node.children[0], True) | self.facts(node.children[1], True)
        if node.data == "conditionalor" and len(node.children) == 2 and not positive:
            return self.facts(node.children[0], False) | self.facts(node.children[1], False)
        if node.data == "relation" and len(node.children) == 2:
            op = node.children[0].data
            left, right = node.children[0].children[0], node.children[1]
            if (op == "relation_ne" and positive) or (op == "relation_eq" and not positive):
                for a, b in ((left, right), (right, left)):
                    if self.is_null_literal(b):
                        path = self.path_of(a)
                        if path is not None:
                            return frozenset({path})
        return frozenset()

    # -- dispatch
    def check(self, node: Any) -> CelType:
        if not isinstance(node, lark.Tree):
            raise self.fail(node, f"unexpected token {node!s}")
        method = getattr(self, f"_{node.data}", None)
        if method is None:
            raise self.fail(node, f"'{node.data}' is not supported in gpusolve rules")
        result: CelType = method(node)
        return result

    def _expr(self, node: lark.Tree[Any]) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        cond, then, other = node.children
        self.want_bool(cond, self.check(cond), "the condition before '?'")
        with self.narrowed(self.facts(cond, True)):
            a = self.check(then)
        with self.narrowed(self.facts(cond, False)):
            b = self.check(other)
        return self.unify(node, a, b)

    def _conditionalor(self, node: lark.Tree[Any]) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        left, right = node.children
        self.want_bool(left, self.check(left), "the left side of '||'")
        with self.narrowed(self.facts(left, False)):
            self.want_bool(right, self.check(right), "the right side of '||'")
        return BOOL

    def _conditionaland(self, node: lark.Tree[Any]) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        left, right = node.children
        self.want_bool(left, self.check(left), "the left side of '&&'")
        with self.narrowed(self.facts(left, True)):
            self.want_bool(right, self.check(right), "the right side of '&&'")
        return BOOL

    def want_bool(self, node: Any, t: CelType, what: str) -> None:
        if t.kind == "dyn" and not t.nullable:
            return
        if t.kind != "bool" or t.nullable:
            raise self.fail(
                node,
                f"{what} must be true or false, but it is {t.describe()}",
                self.null_hint(node) if t.nullable and t.kind == "bool" else "",
            )

    def null_hint(self, node: Any) -> str:
        text = self.text_of(node)
        return f"guard it: `{text} != null && ...`" if text else "guard it with `!= null`"

    def text_of(self, node: Any) -> str:
        links = self.chain(node)
        return ".".join(n for n, _ in links) if links else ""

    def unify(self, node: Any, a: CelType, b: CelType) -> CelType:
        if a.kind == "null":
            return b.but(nullable=True)
        if b.kind == "null":
            return a.but(nullable=True)
        if a.kind == "dyn" or b.kind == "dyn":
            return DYN.but(nullable=a.nullable or b.nullable)
        if a.kind != b.kind:
            raise self.fail(node, f"the two branches differ: {a.describe()} and {b.describe()}")
        if a.kind == "str" and (a.choices or b.choices):
            return CelType("str", nullable=a.nullable or b.nullable)
        return a.but(nullable=a.nullable or b.nullable)

    def _relation(self, node: lark.Tree[Any]) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op_node, right_node = node.children
        left_node = op_node.children[0]
        op = op_node.data
        if op in ("relation_eq", "relation_ne") and (
            self.is_null_literal(left_node) or self.is_null_literal(right_node)
        ):
            # `x == null` reads only whether x is null: the memo key is that, not all of x.
            left = self.check_null_test(left_node)
            right = self.check_null_test(right_node)
            return BOOL
        left = self.check(left_node)
        right = self.check(right_node)
        symbol = {
            "relation_lt": "<",
            "relation_le": "<=",
            "relation_gt": ">",
            "relation_ge": ">=",
            "relation_eq": "==",
            "relation_ne": "!=",
            "relation_in": "in",
        }[op]
        if op in ("relation_eq", "relation_ne"):
            self.comparable(node, left_node, left, right_node, right, symbol)
        elif op == "relation_in":
            self.membership(node, left_node, left, right_node, right)
        else:
            for side, t in ((left_node, left), (right_node, right)):
                if t.nullable and t.kind != "dyn":
                    raise self.fail(
                        side,
                        f"`{self.text_of(side) or 'this value'}` may be null here; "
                        f"'{symbol}' needs a value",
                        self.null_hint(side),
                    )
            kinds = {left.kind, right.kind} - {"dyn"}
            if not (kinds <= {"num"} or kinds <= {"str"}):
                raise self.fail(
                    node, f"cannot order {left.describe()} against {right.describe()} with {symbol}"
                )
        return BOOL

    def is_null_literal(self, node: Any) -> bool:
        lit = _unwrap(node)
        if not (isinstance(lit, lark.Tree) and lit.data == "literal"):
            return False
        tok: Any = lit.children[0]
        return bool(tok.type == "NULL_LIT")

    def check_null_test(self, node: Any) -> CelType:
        if self.is_null_literal(node):
            return NULL
        if self.chain(node) is not None:
            return self.resolve(node, mode="n")
        return self.check(node)

    def comparable(
        self, node: Any, ln: Any, left: CelType, rn: Any, right: CelType, symbol: str
    ) -> None:
        if "null" in (left.kind, right.kind) or "dyn" in (left.kind, right.kind):
            return
        if left.kind != right.kind:
            raise self.fail(
                node,
                f"cannot compare {left.describe()} with {right.describe()} using {symbol}",
                "compare like with like (numbers with numbers, text with quoted text)",
            )
        if left.kind == "str":
            self.check_choice(ln, left, rn)
            self.check_choice(rn, right, ln)

    def check_choice(self, field_node: Any, t: CelType, literal_node: Any) -> None:
        if not t.choices:
            return
        value = self.literal_string(literal_node)
        if value is not None and value not in t.choices:
            options = ", ".join(f'"{c}"' for c in sorted(t.choices))
            close = difflib.get_close_matches(value, sorted(t.choices), n=1)
            hint = f'did you mean "{close[0]}"?' if close else f"use one of {options}"
            name = self.text_of(field_node) or "this field"
            raise self.fail(
                literal_node, f'"{value}" is never a value of {name} (one of {options})', hint
            )

    def membership(self, node: Any, ln: Any, left: CelType, rn: Any, right: CelType) -> None:
        if right.kind == "dyn":
            return
        if right.nullable:
            raise self.fail(
                rn, f"`{self.text_of(rn) or 'the list'}` may be null here", self.null_hint(rn)
            )
        if right.kind == "map":
            if left.kind not in ("str", "dyn"):
                raise self.fail(node, "map keys are text")
            return
        if right.kind != "list":
            raise self.fail(rn, f"'in' needs a list on the right, not {right.describe()}")
        elem = right.elem or DYN
        if elem.kind not in ("dyn", left.kind) and left.kind not in ("dyn", "null"):
            raise self.fail(node, f"cannot look for {left.describe()} in {right.describe()}")
        if elem.choices:
            self.check_choice(rn, elem, ln)
        if left.choices:
            items = _unwrap(rn)
            if isinstance(items, lark.Tree) and items.data == "list_lit" and items.children:
                for item in items.children[0].children:
                    self.check_choice(ln, left, item)

    def _addition(self, node: lark.Tree[Any]) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op_node, right_node = node.children
        left_node = op_node.children[0]
        left, right = self.check(left_node), self.check(right_node)
        symbol = "+" if op_node.data == "addition_add" else "-"
        self.no_null(left_node, left, symbol)
        self.no_null(right_node, right, symbol)
        if left.kind == "dyn" or right.kind == "dyn":
            return DYN
        if left.kind == right.kind == "num":
            return NUM
        if symbol == "+" and left.kind == right.kind == "str":
            return STR
        if symbol == "+" and left.kind == right.kind == "list":
            return left.but(nullable=False)
        raise self.fail(node, f"cannot apply {symbol} to {left.describe()} and {right.describe()}")

    def _multiplication(self, node: lark.Tree[Any]) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op_node, right_node = node.children
        if op_node.data == "multiplication_mod":
            raise self.fail(
                op_node, "'%' is not available: numbers in rules are doubles", "use / and compare"
            )
        left_node = op_node.children[0]
        left, right = self.check(left_node), self.check(right_node)
        symbol = "*" if op_node.data == "multiplication_mul" else "/"
        for side, t in ((left_node, left), (right_node, right)):
            self.no_null(side, t, symbol)
            if t.kind not in ("num", "dyn"):
                raise self.fail(side, f"'{symbol}' needs numbers, not {t.describe()}")
        return NUM

    def no_null(self, node: Any, t: CelType, symbol: str) -> None:
        if t.nullable and t.kind != "dyn":
            raise self.fail(
                node,
                f"`{self.text_of(node) or 'this value'}` may be null here; "
                f"'{symbol}' needs a value",
                self.null_hint(node),
            )

    def _unary(self, node: lark.Tree[Any]) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op, operand = node.children
        t = self.check(operand)
        if op.data == "unary_not":
            self.want_bool(operand, t, "the operand of '!'")
            return BOOL
        self.no_null(operand, t, "-")
        if t.kind not in ("num", "dyn"):
            raise self.fail(operand, f"'-' needs a number, not {t.describe()}")
        return NUM

    def _member(self, node: lark.Tree[Any]) -> CelType:
        return self.check(node.children[0])

    def _primary(self, node: lark.Tree[Any]) -> CelType:
        return self.check(node.children[0])

    def _paren_expr(self, node: lark.Tree[Any]) -> CelType:
        return self.check(node.children[0])

    def _literal(self, node: lark.Tree[Any]) -> CelType:
        tok: Any = node.children[0]
        if tok.type in ("INT_LIT", "UINT_LIT", "FLOAT_LIT"):
            return NUM
        if tok.type in ("STRING_LIT", "MLSTRING_LIT"):
            return STR
        if tok.type == "BOOL_LIT":
            return BOOL
        if tok.type == "NULL_LIT":
            return NULL
        raise self.fail(node, "byte strings are not supported in gpusolve rules")

    def _list_lit(self, node: lark.Tree[Any]) -> CelType:
        if not node.children:
            return list_of(DYN)
        items = [self.check(c) for c in node.children[0].children]
        elem = items[0]
        for t in items[1:]:
            elem = self.unify(node, elem, t)
        return list_of(elem)

    def _map_lit(self, node: lark.Tree[Any]) -> CelType:
        raise self.fail(node, "map literals are not supported in gpusolve rules")

    def _member_object(self, node: lark.Tree[Any]) -> CelType:
        raise self.fail(node, "message construction (Type{...}) is not supported in gpusolve rules")

    def _dot_ident(self, node: lark.Tree[Any]) -> CelType:
        raise self.fail(node, "leading-dot names are not supported in gpusolve rules")

    _dot_ident_arg = _dot_ident

    def _ident(self, node: lark.Tree[Any]) -> CelType:
        return self.resolve(node)

    def _member_dot(self, node: lark.Tree[Any]) -> CelType:
        if self.chain(node) is not None:
            return self.resolve(node)
        base_node, name = node.children
        base = self.check(base_node)
        return self.select(name, base, str(name), "this value")

    def resolve(self, node: Any, mode: str = "v") -> CelType:
        """Type of a pure selection `root.a.b`, with null narrowing; records what it reads."""
        links = self.chain(node)
        assert links is not None
        root, root_node = links[0]
        if root in self.locals:
            t, key = self.locals[root]
            path: Path = (key,)
            record = False
        elif root in self.variables:
            t = self.variables[root]
            path = (root,)
            record = True
        else:
            raise self.unknown_variable(root_node, root)
        if path in self.nonnull:
            t = t.but(nullable=False)
        for name, link_node in links[1:]:
            shown = ".".join(path if record else (root, *path[1:]))
            t = self.select(link_node.children[1], t, name, shown)
            path = (*path, name)
            if path in self.nonnull:
                t = t.but(nullable=False)
        if record:
            self.reads.append((path, mode, id(node)))
        return t

    def select(self, node: Any, base: CelType, name: str, base_text: str) -> CelType:
        if base.kind == "dyn":
            return DYN.but(nullable=True)
        if base.nullable:
            raise self.fail(
                node,
                f"`{base_text}` may be null here, so `.{name}` may fail",
                f"guard it: `{base_text} != null && ...`",
            )
        if base.kind != "obj" or base.fields is None:
            raise self.fail(node, f"`{base_text}` is {base.describe()}; it has no field {name!r}")
        field = base.fields.get(name)
        if field is None:
            known = sorted(base.fields)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise self.fail(
                node,
                f"unknown field {name!r} of {base_text} ({base.name})",
                hint + "known fields: " + ", ".join(known),
            )
        return field

    def unknown_variable(self, node: Any, name: str) -> CelError:
        from gpusolve.rules.environment import all_variable_names

        available = ", ".join(sorted(self.variables))
        if name in all_variable_names():
            return self.fail(
                node,
                f"`{name}` is not available here (available: {available})",
                f"use `{name}` in a require.{name if name != 'workload' else 'card'} or "
                f"prefer.{name} expression"
                if name in ("card", "server", "offer", "cloud", "deployment")
                else "",
            )
        close = difflib.get_close_matches(name, sorted(self.variables), n=1)
        hint = f"did you mean `{close[0]}`?" if close else f"available: {available}"
        return self.fail(node, f"unknown variable `{name}`", hint)

    def _member_index(self, node: lark.Tree[Any]) -> CelType:
        base_node, index_node = node.children
        base = self.check(base_node)
        index = self.check(index_node)
        self.no_null(base_node, base, "[]")
        if base.kind == "list":
            if index.kind not in ("num", "dyn"):
                raise self.fail(index_node, "a list index is a number")
            return base.elem or DYN
        if base.kind == "map":
            return (base.elem or DYN).but(nullable=True)
        if base.kind == "dyn":
            return DYN
        raise self.fail(node, f"cannot index {base.describe()}")

    def _ident_arg(self, node: lark.Tree[Any]) -> CelType:
        name = str(node.children[0])
        args = list(node.children[1].children) if len(node.children) > 1 else []
        if name == "has":
            raise self.fail(
                node,
                "has() is not used in gpusolve rules: every declared field is always present",
                "optional fields are null when not given; test them with `x != null`",
            )
        if name not in FUNCTIONS:
            close = difflib.get_close_matches(name, FUNCTIONS, n=1)
            hint = f"did you mean {close[0]}()? " if close else ""
            raise self.fail(
                node, f"unknown function {name}()", hint + "available: " + ", ".join(FUNCTIONS)
            )
        if len(args) != 1:
            raise self.fail(node, f"{name}() takes one argument")
        t = self.check(args[0])
        self.no_null(args[0], t, f"{name}()")
        if name == "size":
            if t.kind not in ("str", "list", "map", "dyn"):
                raise self.fail(args[0], f"size() needs text or a list, not {t.describe()}")
            return NUM
        if name in ("int", "double"):
            if t.kind not in ("num", "str", "dyn"):
                raise self.fail(args[0], f"{name}() needs a number or text")
            return NUM
        return STR

    def _member_dot_arg(self, node: lark.Tree[Any]) -> CelType:
        recv_node, name_tok = node.children[0], node.children[1]
        name = str(name_tok)
        args = list(node.children[2].children) if len(node.children) > 2 else []
        recv = self.check(recv_node)
        self.no_null(recv_node, recv, f".{name}()")
        if name in MACROS:
            if recv.kind not in ("list", "dyn"):
                raise self.fail(node, f".{name}() works on lists, not {recv.describe()}")
            if len(args) != 2:
                raise self.fail(node, f".{name}() takes a variable name and an expression")
            var = _unwrap(args[0])
            if not (isinstance(var, lark.Tree) and var.data == "ident"):
                raise self.fail(args[0], f"the first argument of .{name}() is a variable name")
            var_name = str(var.children[0])
            if var_name in self.variables:
                raise self.fail(args[0], f"`{var_name}` is already a variable; choose another name")
            if self.macro_depth >= MAX_MACRO_NESTING:
                raise self.fail(
                    node,
                    f"comprehensions (.{name}() and the like) nest at most "
                    f"{MAX_MACRO_NESTING} deep in gpusolve rules",
                    "nesting multiplies the work by the size of every list; split the rule",
                )
            self._serial += 1
            key = f"@{var_name}#{self._serial}"
            elem = (recv.elem or DYN) if recv.kind == "list" else DYN
            saved = self.locals.get(var_name)
            self.locals[var_name] = (elem, key)
            self.macro_depth += 1
            try:
                body = self.check(args[1])
            finally:
                self.macro_depth -= 1
                if saved is None:
                    del self.locals[var_name]
                else:
                    self.locals[var_name] = saved
            if name == "map":
                return list_of(body)
            self.want_bool(args[1], body, f"the expression in .{name}()")
            return list_of(elem) if name == "filter" else BOOL
        if name == "size":
            if args:
                raise self.fail(node, ".size() takes no arguments")
            if recv.kind not in ("str", "list", "map", "dyn"):
                raise self.fail(node, f".size() needs text or a list, not {recv.describe()}")
            return NUM
        if name in STRING_METHODS:
            if recv.kind not in ("str", "dyn"):
                raise self.fail(node, f".{name}() works on text, not {recv.describe()}")
            if len(args) != 1:
                raise self.fail(node, f".{name}() takes one argument")
            arg = self.check(args[0])
            self.no_null(args[0], arg, f".{name}()")
            if arg.kind not in ("str", "dyn"):
                raise self.fail(args[0], f".{name}() takes text")
            return BOOL
        known = (*MACROS, "size", *STRING_METHODS)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean .{close[0]}()? " if close else ""
        raise self.fail(node, f"unknown method .{name}()", hint + "available: " + ", ".join(known))


class _Narrow:
    def __init__(self, checker: _Checker, extra: frozenset[Path]) -> None:
        self.checker = checker
        self.extra = extra
        self.saved: frozenset[Path] = frozenset()

    def __enter__(self) -> None:
        self.saved = self.checker.nonnull
        self.checker.nonnull = self.saved | self.extra

    def __exit__(self, *exc: object) -> None:
        self.checker.nonnull = self.saved


# --------------------------------------------------------------------------- programs


class Bindings:
    """The variables of one evaluation, drawn from several Facts (by root variable)."""

    __slots__ = ("_by_root",)

    def __init__(self, *facts: Facts, base: Mapping[str, Facts] | None = None) -> None:
        self._by_root: dict[str, Facts] = dict(base) if base else {}
        for f in facts:
            self._by_root.update(f.owners)

    def key(self, path: Path, mode: str) -> Any:
        owner = self._by_root[path[0]]
        return owner.key(path) if mode == "v" else owner.is_null(path)

    def plain(self, path: Path) -> Any:
        return self._by_root[path[0]].walk(path)

    def context(self) -> dict[str, Any]:
        return {name: f.variables[name] for name, f in self._by_root.items()}


_MISS = object()
Read = tuple[Path, str]  # (path, "v" value | "n" null-test)


_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication"}
    | {"unary"}
)


def _collapsed(node: Any) -> Any:
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


# --- fast path --------------------------------------------------------------------------
# Most terms are `field`, `!field`, `field OP literal` or `field in [literals]`. For those
# shapes the result is computed directly from the plain data with exactly the semantics
# of cel-python plus the operator overrides above (numbers compare as doubles, `null`
# equals only `null`, ordering a null is an error); a property test checks the two agree.
# Anything else is evaluated by cel-python.

_ORDER_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "relation_lt": operator.lt,
    "relation_le": operator.le,
    "relation_gt": operator.gt,
    "relation_ge": operator.ge,
}
_NO_VALUE = object()


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _plain_eq(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if _is_number(a) and _is_number(b):
        return float(a) == float(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _literal_value(node: Any) -> Any:
    """The Python value of a literal node, or _NO_VALUE."""
    node = _unwrap(node)
    negate = False
    if (
        isinstance(node, lark.Tree)
        and node.data == "unary"
        and len(node.children) == 2
        and node.children[0].data == "unary_neg"
    ):
        negate = True
        node = _unwrap(node.children[1])
    if not (isinstance(node, lark.Tree) and node.data == "literal"):
        return _NO_VALUE
    tok: Any = node.children[0]
    value: Any
    text = str(tok.value)
    try:
        if tok.type in ("INT_LIT", "UINT_LIT"):
            digits = text.rstrip("uU")
            hexa = digits.lstrip("-").lower().startswith("0x")
            value = int(digits, 16) if hexa else int(digits)
        elif tok.type == "FLOAT_LIT":
            value = float(text)
        elif tok.type in ("STRING_LIT", "MLSTRING_LIT"):
            value = str(_celpy()["celstr"](tok))
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


def _fast_plan(tree: Any, reads: Sequence[Read], want_bool: bool) -> Callable[..., Any] | None:
    """A direct evaluator for the simple shapes, or None."""
    paths = {p for p, m in reads if m == "v"}

    def chain(node: Any) -> Path | None:
        names: list[str] = []
        cur = _unwrap(node)
        while isinstance(cur, lark.Tree) and cur.data == "member_dot":
            names.append(str(cur.children[1]))
            cur = _unwrap(cur.children[0])
        if isinstance(cur, lark.Tree) and cur.data == "primary":
            cur = _unwrap(cur.children[0])
        if isinstance(cur, lark.Tree) and cur.data == "ident":
            path = (str(cur.children[0]), *reversed(names))
            return path if path in paths or any(p == path for p, _ in reads) else None
        return None

    node = _unwrap(tree)
    single = chain(node)
    if single is not None:
        if want_bool:
            return lambda b: _bool_or_fail(b.plain(single))
        return lambda b: b.plain(single)
    if not want_bool or not isinstance(node, lark.Tree):
        return None
    if node.data == "unary" and len(node.children) == 2 and node.children[0].data == "unary_not":
        inner = chain(node.children[1])
        if inner is None:
            return None
        return lambda b: _not(_bool_or_fail(b.plain(inner)))
    if node.data != "relation" or len(node.children) != 2:
        return None
    op = node.children[0].data
    left, right = node.children[0].children[0], node.children[1]
    if op == "relation_in":
        field = chain(left)
        items = _unwrap(right)
        if field is None or not (isinstance(items, lark.Tree) and items.data == "list_lit"):
            return None
        values = [_literal_value(c) for c in (items.children[0].children if items.children else [])]
        if any(v is _NO_VALUE for v in values):
            return None
        return lambda b: any(_plain_eq(b.plain(field), v) for v in values)
    field, literal, flipped = chain(left), _literal_value(right), False
    if field is None or literal is _NO_VALUE:
        field, literal, flipped = chain(right), _literal_value(left), True
    if field is None or literal is _NO_VALUE:
        return None
    if op == "relation_eq":
        return lambda b: _plain_eq(b.plain(field), literal)
    if op == "relation_ne":
        return lambda b: not _plain_eq(b.plain(field), literal)
    compare = _ORDER_OPS.get(op)
    if compare is None:
        return None
    lit = literal

    def ordered(b: Bindings) -> Any:
        value = b.plain(field)
        x, y = (lit, value) if flipped else (value, lit)
        if _is_number(x) and _is_number(y):
            return compare(float(x), float(y))
        if isinstance(x, str) and isinstance(y, str):
            return compare(x, y)
        return EvalFailure("null has no order (guard the field with `!= null`)")

    return ordered


def _bool_or_fail(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    return EvalFailure(f"expected true or false, got {value!r}")


def _not(value: Any) -> Any:
    return (not value) if isinstance(value, bool) else value


class _Unit:
    """One independently evaluated (sub)expression with its memo table."""

    __slots__ = ("fast", "memo", "reads", "tree", "want_bool")

    def __init__(self, tree: lark.Tree[Any], reads: Sequence[Read], want_bool: bool) -> None:
        self.reads = tuple(reads)
        self.want_bool = want_bool
        self.fast = _fast_plan(tree, self.reads, want_bool)
        self.tree = _collapsed(tree)
        self.memo: dict[tuple[Any, ...], Any] = {}

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(p for p, _ in self.reads)

    def run(self, bindings: Bindings) -> Any:
        if self.fast is not None:
            return self.fast(bindings)
        key = tuple([bindings.key(p, m) for p, m in self.reads])
        hit = self.memo.get(key, _MISS)
        if hit is not _MISS:
            return hit
        result = self._evaluate(bindings.context())
        if len(self.memo) >= MAX_MEMO:
            self.memo.clear()
        self.memo[key] = result
        return result

    def _evaluate(self, context: dict[str, Any]) -> Any:
        cel = _celpy()
        try:
            value = cel["Evaluator"](self.tree, activation=cel["base"]).evaluate(context)
        except cel["CELEvalError"] as exc:
            return EvalFailure(_eval_message(exc))
        except Exception as exc:  # cel-python internals: never a traceback for a rule
            return EvalFailure(f"{type(exc).__name__}: {exc}")
        if not self.want_bool:
            return value
        if isinstance(value, cel["ct"].BoolType):
            return bool(value)
        return EvalFailure(f"expected true or false, got {value!r}")


def _eval_message(exc: Exception) -> str:
    args: Any = getattr(exc, "args", ())
    if len(args) >= 3 and isinstance(args[2], tuple) and args[2]:
        return str(args[2][0])
    return str(args[0]) if args else str(exc)


class Program:
    """A compiled predicate: bool-valued, statically checked, evaluated term by term.

    `terms` is a conjunction of disjunctions of units (`a && (b || c) && d` at top
    level): each unit is evaluated separately, memoised on the fields it reads, with
    CEL's commutative error semantics (`false && error` is false, `true || error` true).
    """

    def __init__(
        self,
        text: str,
        tree: lark.Tree[Any],
        terms: list[list[_Unit]],
        nonnull_if_true: frozenset[Path] = frozenset(),
    ) -> None:
        self.text = text
        self.tree = tree
        self.terms = terms
        self.units = [u for term in terms for u in term]
        self.paths: frozenset[Path] = frozenset(p for u in self.units for p in u.paths)
        self._roots = frozenset(p[0] for p in self.paths)
        # Fields this predicate proves non-null when true (`x != null && ...`): expressions
        # that only run after it (a rule's require/prefer/advise) may use them unguarded.
        self.nonnull_if_true = nonnull_if_true

    def params_read(self) -> frozenset[str]:
        return frozenset(p[1] for p in self.paths if p[0] == "params" and len(p) > 1)

    def variables_read(self) -> frozenset[str]:
        return self._roots

    def evaluate(self, bindings: Bindings) -> bool | EvalFailure:
        failure: EvalFailure | None = None
        for term in self.terms:
            outcome = _any(term, bindings)
            if outcome is False:
                return False
            if outcome is not True:
                failure = failure or outcome
        return failure if failure is not None else True

    def __repr__(self) -> str:
        return f"Program({self.text!r})"


def _any(units: list[_Unit], bindings: Bindings) -> bool | EvalFailure:
    failure: EvalFailure | None = None
    for unit in units:
        result = unit.run(bindings)
        if result is True:
            return True
        if result is not False:
            failure = failure or result
    return failure if failure is not None else False


def _split(tree: Any, op: str) -> list[Any]:
    """Operands of a top-level chain of `op` nodes (through parentheses); else [tree]."""
    inner = _unwrap(tree)
    if not (isinstance(inner, lark.Tree) and inner.data == op and len(inner.children) == 2):
        return [tree]
    parts: list[Any] = []
    stack: list[Any] = [inner]
    while stack:
        cur = stack.pop()
        unwrapped = _unwrap(cur)
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


def _subtree_ids(tree: Any) -> set[int]:
    ids: set[int] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        ids.add(id(node))
        if isinstance(node, lark.Tree):
            stack.extend(node.children)
    return ids


def _check(
    text: str, variables: Mapping[str, CelType], nonnull: frozenset[Path]
) -> tuple[lark.Tree[Any], _Checker, CelType]:
    tree = parse(text)
    checker = _Checker(variables, nonnull)
    return tree, checker, checker.check(tree)


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
    terms: list[list[_Unit]] = []
    for conjunct in _split(tree, "conditionaland"):
        term = []
        for disjunct in _split(conjunct, "conditionalor"):
            term.append(_Unit(disjunct, _reads_in(checker, disjunct), want_bool=True))
        terms.append(term)
    return Program(text, tree, terms, checker.facts(tree, True) | assume_nonnull)


def _reads_in(checker: _Checker, subtree: Any) -> list[Read]:
    ids = _subtree_ids(subtree)
    modes: dict[Path, str] = {}
    for path, mode, nid in checker.reads:
        if nid in ids and modes.get(path) != "v":
            modes[path] = mode
    return sorted(modes.items())


def compile_value(
    text: str, variables: Mapping[str, CelType], assume_nonnull: frozenset[Path] = frozenset()
) -> tuple[_Unit, CelType]:
    tree, checker, result = _check(text, variables, assume_nonnull)
    return _Unit(tree, _reads_in(checker, tree), want_bool=False), result


# --------------------------------------------------------------------------- templates


class Template:
    """An advice message with `{cel expression}` placeholders (`{{`/`}}` for braces)."""

    def __init__(self, text: str, parts: list[str | _Unit]) -> None:
        self.text = text
        self.parts = parts

    @property
    def paths(self) -> frozenset[Path]:
        return frozenset(p for part in self.parts if isinstance(part, _Unit) for p in part.paths)

    def render(self, bindings: Bindings) -> str:
        """The message with placeholders filled; whitespace runs become one space."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(format_value(part.run(bindings)))
        return " ".join("".join(out).split())


def compile_template(
    text: str, variables: Mapping[str, CelType], assume_nonnull: frozenset[Path] = frozenset()
) -> Template:
    parts: list[str | _Unit] = []
    for literal, expr, offset in _split_template(text):
        if literal:
            parts.append(literal)
        if expr is not None:
            try:
                unit, _ = compile_value(expr, variables, assume_nonnull)
            except CelError as exc:
                raise CelError(
                    f"in placeholder {{{expr}}}: {exc.message}",
                    None,
                    offset + (exc.column or 1) - 1 if exc.column else offset,
                    exc.hint,
                ) from None
            parts.append(unit)
    return Template(text, parts)


def _split_template(text: str) -> Iterator[tuple[str, str | None, int]]:
    buf: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "{" and text.startswith("{{", i):
            buf.append("{")
            i += 2
        elif ch == "}" and text.startswith("}}", i):
            buf.append("}")
            i += 2
        elif ch == "{":
            end = text.find("}", i + 1)
            if end < 0:
                raise CelError("unclosed '{' in the message", 1, i + 1, "write {{ for a brace")
            expr = text[i + 1 : end].strip()
            if not expr:
                raise CelError("empty {} in the message", 1, i + 1, "write {{}} for braces")
            yield "".join(buf), expr, i + 2
            buf = []
            i = end + 1
        elif ch == "}":
            raise CelError("unmatched '}' in the message", 1, i + 1, "write }} for a brace")
        else:
            buf.append(ch)
            i += 1
    if buf:
        yield "".join(buf), None, len(text)


def format_value(value: Any) -> str:
    """Numbers without spurious digits: 112.0 -> 112, 0.25 -> 0.25, 13.333 -> 13.33."""
    if isinstance(value, EvalFailure) or value is None:
        return "unknown"
    ct = _celpy()["ct"]
    if isinstance(value, bool | ct.BoolType):
        return "true" if value else "false"
    if isinstance(value, int | float):
        number = float(value)
        if number.is_integer() and abs(number) < 1e15:
            return str(int(number))
        if abs(number) >= 100:
            return f"{number:.0f}"
        return f"{number:.4g}"
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value)
    return str(value)
