"""Names in an expression: what a selection `root.a.b` refers to, its declared type, and
which fields are known non-null at a point of the expression (null narrowing).

`Scope` is the static checker's (`check.py`) memory: the declared variables, the
comprehension locals in force, the paths narrowed to non-null by a guard
(`x != null && x > 3`, `x == null || x > 3`, `x != null ? x : 0`), and every field read,
which the evaluator uses as memo keys.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import lark

from gpusolve.rules.declarations import DYN, CelType
from gpusolve.rules.declarations import Path as Path
from gpusolve.rules.declarations import ReadMode as ReadMode
from gpusolve.rules.parse import CelError, Node, error_at, is_null_literal, subtree, unwrap

Link = tuple[str, Node]


class Scope:
    def __init__(
        self, variables: Mapping[str, CelType], nonnull: frozenset[Path] = frozenset()
    ) -> None:
        self.variables = dict(variables)
        self.locals: dict[str, tuple[CelType, str]] = {}
        self.nonnull: frozenset[Path] = nonnull
        # (path rooted at a variable, mode, id(node))
        self.reads: list[tuple[Path, ReadMode, int]] = []

    @contextmanager
    def narrowed(self, extra: frozenset[Path]) -> Iterator[None]:
        """Within the block, `extra` paths are known non-null."""
        saved = self.nonnull
        self.nonnull = saved | extra
        try:
            yield
        finally:
            self.nonnull = saved

    def chain(self, node: Node) -> list[Link] | None:
        """[(name, node)...] root first, for a pure `a.b.c` selection; else None."""
        names: list[Link] = []
        cur = unwrap(node)
        while isinstance(cur, lark.Tree):
            if cur.data == "member_dot":
                names.append((str(cur.children[1]), cur))
                cur = unwrap(cur.children[0])
                continue
            if cur.data == "ident":
                names.append((str(cur.children[0]), cur))
                names.reverse()
                return names
            return None
        return None

    def path_of(self, node: Node) -> Path | None:
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

    def text_of(self, node: Node) -> str:
        links = self.chain(node)
        return ".".join(n for n, _ in links) if links else ""

    def null_hint(self, node: Node) -> str:
        text = self.text_of(node)
        return f"guard it: `{text} != null && ...`" if text else "guard it with `!= null`"

    def facts(self, node: Node, positive: bool) -> frozenset[Path]:
        """Paths known non-null when `node` evaluates to `positive`."""
        node = unwrap(node)
        if not isinstance(node, lark.Tree) or len(node.children) != 2:
            return frozenset()
        first, second = node.children
        if node.data == "unary" and subtree(first).data == "unary_not":
            return self.facts(second, not positive)
        if node.data == "conditionaland" and positive:
            return self.facts(first, True) | self.facts(second, True)
        if node.data == "conditionalor" and not positive:
            return self.facts(first, False) | self.facts(second, False)
        if node.data == "relation":
            op = subtree(first)
            left, right = op.children[0], second
            if (op.data == "relation_ne" and positive) or (
                op.data == "relation_eq" and not positive
            ):
                for a, b in ((left, right), (right, left)):
                    if is_null_literal(b):
                        path = self.path_of(a)
                        if path is not None:
                            return frozenset({path})
        return frozenset()

    def resolve(self, node: Node, mode: ReadMode = "v") -> CelType:
        """Type of a pure selection `root.a.b`, with null narrowing; records what it reads."""
        links = self.chain(node)
        if links is None:  # pragma: no cover - callers resolve only selections
            raise error_at(node, "expected a name")
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
            t = self.select(subtree(link_node).children[1], t, name, shown)
            path = (*path, name)
            if path in self.nonnull:
                t = t.but(nullable=False)
        if record:
            self.reads.append((path, mode, id(node)))
        return t

    def select(self, node: Node, base: CelType, name: str, base_text: str) -> CelType:
        if base.kind == "dyn":
            return DYN.but(nullable=True)
        if base.nullable:
            raise error_at(
                node,
                f"`{base_text}` may be null here, so `.{name}` may fail",
                f"guard it: `{base_text} != null && ...`",
            )
        if base.kind != "obj" or base.fields is None:
            raise error_at(node, f"`{base_text}` is {base.describe()}; it has no field {name!r}")
        field = base.fields.get(name)
        if field is None:
            known = sorted(base.fields)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise error_at(
                node,
                f"unknown field {name!r} of {base_text} ({base.name})",
                hint + "known fields: " + ", ".join(known),
            )
        return field

    def unknown_variable(self, node: Node, name: str) -> CelError:
        from gpusolve.rules.declarations import all_variable_names

        available = ", ".join(sorted(self.variables))
        if name in all_variable_names():
            return error_at(
                node,
                f"`{name}` is not available here (available: {available})",
                f"use `{name}` in a require.{name if name != 'workload' else 'card'} or "
                f"prefer.{name} expression"
                if name in ("card", "server", "offer", "cloud", "deployment")
                else "",
            )
        close = difflib.get_close_matches(name, sorted(self.variables), n=1)
        hint = f"did you mean `{close[0]}`?" if close else f"available: {available}"
        return error_at(node, f"unknown variable `{name}`", hint)
