"""User-facing errors: a location, what is wrong, what to do. Never a traceback."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# C0 controls but tab and newline, DEL and the C1 controls: ESC starts terminal sequences
# (colours, cursor moves, OSC window titles), C1's CSI and OSC do the same in one character,
# CR rewrites the line shown; text from a catalogue or an input file carries none of them
# to a terminal (ECMA-48 §5: C0 and C1 control functions).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text safe to print on a terminal: control characters removed, tabs and newlines
    kept."""
    return _CONTROL.sub("", text)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input, located as precisely as we can."""

    file: str
    line: int | None
    column: int | None
    message: str
    hint: str | None = None
    context: str | None = None  # e.g. "rule full-ft-13b-prefers-80gb"

    def render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.message}"
        if self.context:
            text = f"{where}: [{self.context}] {self.message}"
        if self.hint:
            text += f"; {self.hint}"
        return printable(text)


@dataclass
class InputError(Exception):
    """Invalid input or usage: exit code 2."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(p.render() for p in self.problems)

    @classmethod
    def single(
        cls,
        file: str,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
        context: str | None = None,
    ) -> InputError:
        return cls([Problem(file, line, column, message, hint, context)])
