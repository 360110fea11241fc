"""The error of one expression, with its position: importable without the parser, so that
code which only catches it (the loader, templates) loads no parser when every expression of
a run is read back compiled (`compiled.py`)."""

from __future__ import annotations


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
