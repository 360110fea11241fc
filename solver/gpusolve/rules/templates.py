"""Advice messages with `{cel expression}` placeholders (`{{`/`}}` for literal braces).

Each placeholder is compiled (and checked) like any other expression when the rule file
is loaded; rendering fills it with the value and writes numbers without spurious digits.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping

from gpusolve.rules.bindings import Bindings, EvalFailure
from gpusolve.rules.celerror import CelError
from gpusolve.rules.declarations import CelType, Path
from gpusolve.rules.evaluate import Unit


class Template:
    """An advice message: literal text and compiled placeholders, in order."""

    def __init__(self, text: str, parts: list[str | Unit]) -> None:
        self.text = text
        self.parts = parts

    @property
    def paths(self) -> frozenset[Path]:
        return frozenset(p for part in self.parts if isinstance(part, Unit) for p in part.paths)

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
    from gpusolve.rules.compile import compile_value

    parts: list[str | Unit] = []
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


def format_value(value: object) -> str:
    """Numbers without spurious digits: 112.0 -> 112, 0.25 -> 0.25, 13.333 -> 13.33."""
    # No CEL value exists before cel-python is loaded (a kept memo holds plain values).
    celtypes = sys.modules.get("celpy.celtypes")
    if isinstance(value, EvalFailure) or value is None:
        return "unknown"
    if isinstance(value, bool) or (celtypes is not None and isinstance(value, celtypes.BoolType)):
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
