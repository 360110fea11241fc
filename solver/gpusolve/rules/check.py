"""The static check of an expression against the declared environment (`declarations.py`).

Every variable, field and method is known; comparisons and arithmetic have compatible
types; string literals compared with an enumerated field are among its values; a field
that may be null is used in an ordering comparison or arithmetic only behind a guard
(`scope.py`); the whole predicate is a bool. The functions available are `size`, `int`,
`double`, `string`, the string methods `contains`, `startsWith`, `endsWith`, and the
macros `all`, `exists`, `exists_one`, `map`, `filter` over lists. Regular expressions
(`matches`), `has()`, timestamps and message construction are not available, and
comprehensions nest at most `MAX_MACRO_NESTING` deep, so evaluation is bounded by the size
of the data. Each problem is a `CelError` at the node it concerns, with a hint.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable

import lark

from gpusolve.rules.declarations import BOOL, DYN, NULL, NUM, STR, CelType, list_of
from gpusolve.rules.parse import (
    Node,
    Tree,
    error_at,
    is_null_literal,
    string_literal,
    subtree,
    token,
    unwrap,
)
from gpusolve.rules.scope import Scope

MAX_MACRO_NESTING = 2
# CEL's int is a 64-bit signed integer and its uint a 64-bit unsigned one (cel-spec,
# langdef.md "Values"): a literal beyond them is an error in CEL itself. A double literal
# beyond the double range (1.8e308) would be an infinity no rule can mean.
INT_MAX = 2**63 - 1
UINT_MAX = 2**64 - 1
# More digits than any 64-bit value has (20 decimal, 16 hex): too large without converting
# (Python refuses to convert a string of over 4,300 digits at all).
_MAX_DIGITS = 20
MACROS = ("all", "exists", "exists_one", "map", "filter")
STRING_METHODS = ("contains", "startsWith", "endsWith")
FUNCTIONS = ("size", "int", "double", "string")

_SYMBOLS = {
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_in": "in",
}


class Checker(Scope):
    """The type of each node, by grammar rule (`_<rule>` methods); raises CelError."""

    _serial = 0
    macro_depth = 0

    def check(self, node: Node) -> CelType:
        tree = subtree(node)
        method: Callable[[Tree], CelType] | None = getattr(self, f"_{tree.data}", None)
        if method is None:
            raise error_at(tree, f"'{tree.data}' is not supported in gpusolve rules")
        return method(tree)

    def want_bool(self, node: Node, t: CelType, what: str) -> None:
        if t.kind == "dyn" and not t.nullable:
            return
        if t.kind != "bool" or t.nullable:
            raise error_at(
                node,
                f"{what} must be true or false, but it is {t.describe()}",
                self.null_hint(node) if t.nullable and t.kind == "bool" else "",
            )

    def no_null(self, node: Node, t: CelType, symbol: str) -> None:
        if t.nullable and t.kind != "dyn":
            raise error_at(
                node,
                f"`{self.text_of(node) or 'this value'}` may be null here; "
                f"'{symbol}' needs a value",
                self.null_hint(node),
            )

    def unify(self, node: Node, a: CelType, b: CelType) -> CelType:
        if a.kind == "null":
            return b.but(nullable=True)
        if b.kind == "null":
            return a.but(nullable=True)
        if a.kind == "dyn" or b.kind == "dyn":
            return DYN.but(nullable=a.nullable or b.nullable)
        if a.kind != b.kind:
            raise error_at(node, f"the two branches differ: {a.describe()} and {b.describe()}")
        if a.kind == "str" and (a.choices or b.choices):
            return CelType("str", nullable=a.nullable or b.nullable)
        return a.but(nullable=a.nullable or b.nullable)

    # -- logic

    def _expr(self, node: Tree) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        cond, then, other = node.children
        self.want_bool(cond, self.check(cond), "the condition before '?'")
        with self.narrowed(self.facts(cond, True)):
            a = self.check(then)
        with self.narrowed(self.facts(cond, False)):
            b = self.check(other)
        return self.unify(node, a, b)

    def _conditionalor(self, node: Tree) -> CelType:
        return self._logical(node, "||", False)

    def _conditionaland(self, node: Tree) -> CelType:
        return self._logical(node, "&&", True)

    def _logical(self, node: Tree, symbol: str, left_is: bool) -> CelType:
        """`||` and `&&`: both sides booleans; the right one is checked knowing the left
        is `left_is` (it is evaluated only then)."""
        if len(node.children) == 1:
            return self.check(node.children[0])
        left, right = node.children
        self.want_bool(left, self.check(left), f"the left side of '{symbol}'")
        with self.narrowed(self.facts(left, left_is)):
            self.want_bool(right, self.check(right), f"the right side of '{symbol}'")
        return BOOL

    # -- comparison

    def _relation(self, node: Tree) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op_node, right_node = subtree(node.children[0]), node.children[1]
        left_node = op_node.children[0]
        op = op_node.data
        if op in ("relation_eq", "relation_ne") and (
            is_null_literal(left_node) or is_null_literal(right_node)
        ):
            # `x == null` reads only whether x is null: the memo key is that, not all of x.
            self.check_null_test(left_node)
            self.check_null_test(right_node)
            return BOOL
        left = self.check(left_node)
        right = self.check(right_node)
        symbol = _SYMBOLS[op]
        if op in ("relation_eq", "relation_ne"):
            self.comparable(node, left_node, left, right_node, right, symbol)
        elif op == "relation_in":
            self.membership(node, left_node, left, right_node, right)
        else:
            for side, t in ((left_node, left), (right_node, right)):
                self.no_null(side, t, symbol)
            kinds = {left.kind, right.kind} - {"dyn"}
            if not (kinds <= {"num"} or kinds <= {"str"}):
                raise error_at(
                    node, f"cannot order {left.describe()} against {right.describe()} with {symbol}"
                )
        return BOOL

    def check_null_test(self, node: Node) -> CelType:
        if is_null_literal(node):
            return NULL
        if self.chain(node) is not None:
            return self.resolve(node, mode="n")
        return self.check(node)

    def comparable(
        self, node: Node, ln: Node, left: CelType, rn: Node, right: CelType, symbol: str
    ) -> None:
        if "null" in (left.kind, right.kind) or "dyn" in (left.kind, right.kind):
            return
        if left.kind != right.kind:
            raise error_at(
                node,
                f"cannot compare {left.describe()} with {right.describe()} using {symbol}",
                "compare like with like (numbers with numbers, text with quoted text)",
            )
        if left.kind == "str":
            self.check_choice(ln, left, rn)
            self.check_choice(rn, right, ln)

    def check_choice(self, field_node: Node, t: CelType, literal_node: Node) -> None:
        if not t.choices:
            return
        value = string_literal(literal_node)
        if value is not None and value not in t.choices:
            options = ", ".join(f'"{c}"' for c in sorted(t.choices))
            close = difflib.get_close_matches(value, sorted(t.choices), n=1)
            hint = f'did you mean "{close[0]}"?' if close else f"use one of {options}"
            name = self.text_of(field_node) or "this field"
            raise error_at(
                literal_node, f'"{value}" is never a value of {name} (one of {options})', hint
            )

    def membership(self, node: Node, ln: Node, left: CelType, rn: Node, right: CelType) -> None:
        if right.kind == "dyn":
            return
        if right.nullable:
            raise error_at(
                rn, f"`{self.text_of(rn) or 'the list'}` may be null here", self.null_hint(rn)
            )
        if right.kind == "map":
            if left.kind not in ("str", "dyn"):
                raise error_at(node, "map keys are text")
            return
        if right.kind != "list":
            raise error_at(rn, f"'in' needs a list on the right, not {right.describe()}")
        elem = right.elem or DYN
        if elem.kind not in ("dyn", left.kind) and left.kind not in ("dyn", "null"):
            raise error_at(node, f"cannot look for {left.describe()} in {right.describe()}")
        if elem.choices:
            self.check_choice(rn, elem, ln)
        if left.choices:
            items = unwrap(rn)
            if isinstance(items, lark.Tree) and items.data == "list_lit" and items.children:
                for item in subtree(items.children[0]).children:
                    self.check_choice(ln, left, item)

    # -- arithmetic

    def _addition(self, node: Tree) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op_node, right_node = subtree(node.children[0]), node.children[1]
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
        raise error_at(node, f"cannot apply {symbol} to {left.describe()} and {right.describe()}")

    def _multiplication(self, node: Tree) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op_node, right_node = subtree(node.children[0]), node.children[1]
        if op_node.data == "multiplication_mod":
            raise error_at(
                op_node, "'%' is not available: numbers in rules are doubles", "use / and compare"
            )
        left_node = op_node.children[0]
        left, right = self.check(left_node), self.check(right_node)
        symbol = "*" if op_node.data == "multiplication_mul" else "/"
        for side, t in ((left_node, left), (right_node, right)):
            self.no_null(side, t, symbol)
            if t.kind not in ("num", "dyn"):
                raise error_at(side, f"'{symbol}' needs numbers, not {t.describe()}")
        return NUM

    def _unary(self, node: Tree) -> CelType:
        if len(node.children) == 1:
            return self.check(node.children[0])
        op, operand = subtree(node.children[0]), node.children[1]
        t = self.check(operand)
        if op.data == "unary_not":
            self.want_bool(operand, t, "the operand of '!'")
            return BOOL
        self.no_null(operand, t, "-")
        if t.kind not in ("num", "dyn"):
            raise error_at(operand, f"'-' needs a number, not {t.describe()}")
        return NUM

    # -- terms

    def _member(self, node: Tree) -> CelType:
        return self.check(node.children[0])

    _primary = _member
    _paren_expr = _member

    def _literal(self, node: Tree) -> CelType:
        tok = token(node.children[0])
        if tok.type in ("INT_LIT", "UINT_LIT", "FLOAT_LIT"):
            problem = number_literal_problem(tok.type, str(tok.value))
            if problem is not None:
                raise error_at(node, problem, "for a larger figure write a double, e.g. 1e30")
            return NUM
        if tok.type in ("STRING_LIT", "MLSTRING_LIT"):
            return STR
        if tok.type == "BOOL_LIT":
            return BOOL
        if tok.type == "NULL_LIT":
            return NULL
        raise error_at(node, "byte strings are not supported in gpusolve rules")

    def _list_lit(self, node: Tree) -> CelType:
        if not node.children:
            return list_of(DYN)
        items = [self.check(c) for c in subtree(node.children[0]).children]
        elem = items[0]
        for t in items[1:]:
            elem = self.unify(node, elem, t)
        return list_of(elem)

    def _map_lit(self, node: Tree) -> CelType:
        raise error_at(node, "map literals are not supported in gpusolve rules")

    def _member_object(self, node: Tree) -> CelType:
        raise error_at(node, "message construction (Type{...}) is not supported in gpusolve rules")

    def _dot_ident(self, node: Tree) -> CelType:
        raise error_at(node, "leading-dot names are not supported in gpusolve rules")

    _dot_ident_arg = _dot_ident

    def _ident(self, node: Tree) -> CelType:
        return self.resolve(node)

    def _member_dot(self, node: Tree) -> CelType:
        if self.chain(node) is not None:
            return self.resolve(node)
        base_node, name = node.children
        base = self.check(base_node)
        return self.select(name, base, str(name), "this value")

    def _member_index(self, node: Tree) -> CelType:
        base_node, index_node = node.children
        base = self.check(base_node)
        index = self.check(index_node)
        self.no_null(base_node, base, "[]")
        if base.kind == "list":
            if index.kind not in ("num", "dyn"):
                raise error_at(index_node, "a list index is a number")
            return base.elem or DYN
        if base.kind == "map":
            return (base.elem or DYN).but(nullable=True)
        if base.kind == "dyn":
            return DYN
        raise error_at(node, f"cannot index {base.describe()}")

    # -- calls (functions, methods, macros)

    def _ident_arg(self, node: Tree) -> CelType:
        name = str(node.children[0])
        args = list(subtree(node.children[1]).children) if len(node.children) > 1 else []
        if name == "has":
            raise error_at(
                node,
                "has() is not used in gpusolve rules: every declared field is always present",
                "optional fields are null when not given; test them with `x != null`",
            )
        if name not in FUNCTIONS:
            close = difflib.get_close_matches(name, FUNCTIONS, n=1)
            hint = f"did you mean {close[0]}()? " if close else ""
            raise error_at(
                node, f"unknown function {name}()", hint + "available: " + ", ".join(FUNCTIONS)
            )
        if len(args) != 1:
            raise error_at(node, f"{name}() takes one argument")
        t = self.check(args[0])
        self.no_null(args[0], t, f"{name}()")
        if name == "size":
            if t.kind not in ("str", "list", "map", "dyn"):
                raise error_at(args[0], f"size() needs text or a list, not {t.describe()}")
            return NUM
        if name in ("int", "double"):
            if t.kind not in ("num", "str", "dyn"):
                raise error_at(args[0], f"{name}() needs a number or text")
            literal = _string_literal(args[0])
            if literal is not None and not _converts(name, literal):
                raise error_at(
                    args[0],
                    f"{name}({literal!r}) can never be evaluated: the text is not "
                    f"{'a whole number' if name == 'int' else 'a number'}",
                    "write the number itself",
                )
            return NUM
        return STR

    def _member_dot_arg(self, node: Tree) -> CelType:
        recv_node, name = node.children[0], str(node.children[1])
        args = list(subtree(node.children[2]).children) if len(node.children) > 2 else []
        recv = self.check(recv_node)
        self.no_null(recv_node, recv, f".{name}()")
        if name in MACROS:
            return self.macro(node, name, recv, args)
        if name == "size":
            if args:
                raise error_at(node, ".size() takes no arguments")
            if recv.kind not in ("str", "list", "map", "dyn"):
                raise error_at(node, f".size() needs text or a list, not {recv.describe()}")
            return NUM
        if name in STRING_METHODS:
            if recv.kind not in ("str", "dyn"):
                raise error_at(node, f".{name}() works on text, not {recv.describe()}")
            if len(args) != 1:
                raise error_at(node, f".{name}() takes one argument")
            arg = self.check(args[0])
            self.no_null(args[0], arg, f".{name}()")
            if arg.kind not in ("str", "dyn"):
                raise error_at(args[0], f".{name}() takes text")
            return BOOL
        known = (*MACROS, "size", *STRING_METHODS)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean .{close[0]}()? " if close else ""
        raise error_at(node, f"unknown method .{name}()", hint + "available: " + ", ".join(known))

    def macro(self, node: Tree, name: str, recv: CelType, args: list[Node]) -> CelType:
        """`list.all(x, body)` and the like: `x` is a local bound to the element type."""
        if recv.kind not in ("list", "dyn"):
            raise error_at(node, f".{name}() works on lists, not {recv.describe()}")
        if len(args) != 2:
            raise error_at(node, f".{name}() takes a variable name and an expression")
        var = unwrap(args[0])
        if not (isinstance(var, lark.Tree) and var.data == "ident"):
            raise error_at(args[0], f"the first argument of .{name}() is a variable name")
        var_name = str(var.children[0])
        if var_name in self.variables:
            raise error_at(args[0], f"`{var_name}` is already a variable; choose another name")
        if self.macro_depth >= MAX_MACRO_NESTING:
            raise error_at(
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


def _string_literal(node: Node) -> str | None:
    """The text of a plain string literal ("abc", 'abc'; no escapes), else None."""
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if not isinstance(node, lark.Token) or node.type != "STRING_LIT":
        return None
    text = str(node.value)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and "\\" not in text:
        return text[1:-1]
    return None


def _converts(function: str, text: str) -> bool:
    """Whether int() or double() converts this text at run time (cel-python converts with
    Python's int() and float())."""
    try:
        int(text) if function == "int" else float(text)
    except ValueError:
        return False
    return True


def number_literal_problem(kind: str, text: str) -> str | None:
    """Why a numeric literal is out of CEL's range, or None when it is in range."""
    if kind == "FLOAT_LIT":
        if math.isfinite(float(text)):
            return None
        return f"the number {text[:24]} is beyond the double range (about 1.8e308)"
    digits = text.rstrip("uU")
    negative = digits.startswith("-")
    digits = digits.lstrip("-").lower()
    hexa = digits.startswith("0x")
    body = digits[2:] if hexa else digits
    shown = text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"
    limit = UINT_MAX if kind == "UINT_LIT" else INT_MAX + negative
    if len(body.lstrip("0")) <= _MAX_DIGITS and int(body, 16 if hexa else 10) <= limit:
        return None
    what = "uint" if kind == "UINT_LIT" else "int"
    return f"the integer {shown} is beyond CEL's 64-bit {what} range (at most {limit:,})"
