"""What a command shows once its work is done, and the option errors its inputs reveal.

The package functions in `gpusolve.runs` decide everything a user sees (the text, whether
an -o file is replaced, the exit code); `gpusolve.commands.deliver` only carries it out,
in the order the fields are listed: `before`, `stdout`, `files`, `after`, then the exit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class OutputFile:
    """A file written whole or not at all (atomically), then `note` on stderr if any."""

    path: Path
    data: str | bytes
    note: str | None = None


@dataclass(frozen=True)
class CommandOutput:
    stdout: str = ""
    files: tuple[OutputFile, ...] = ()
    folders: tuple[Path, ...] = ()  # made (with parents) before any file is written
    before: tuple[str, ...] = ()  # stderr lines said before stdout ("no plan: -o left ...")
    after: tuple[str, ...] = ()  # stderr lines said last ("interrupted: the plan above ...")
    exit_code: int = 0


@dataclass(frozen=True)
class RunResult(Generic[T]):
    """What a package function returns: what it found (the ranking, the estimate, the
    frontier) and what its command shows of it."""

    report: T
    output: CommandOutput


def written(path: Path, data: str | bytes) -> OutputFile:
    """The usual -o file: written, then `wrote PATH` said."""
    return OutputFile(path, data, f"wrote {path}")


class BadOption(ValueError):
    """An option or argument whose value the loaded inputs refute (exit 2, named as the
    command line names it: "--card", "REQS.yaml")."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


class OptionConflict(ValueError):
    """Options that cannot go together with these inputs (exit 2, a usage error)."""
