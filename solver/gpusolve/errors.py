"""User-facing errors: a location, what is wrong, what to do. Never a traceback."""

from __future__ import annotations

from dataclasses import dataclass, field


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
        return text


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
