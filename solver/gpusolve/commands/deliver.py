"""Carry out what a package function decided a command shows (`gpusolve.runs.output`),
and report the option errors it found as click reports its own: every solving command
ends in `invoke`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from gpusolve.runs.output import CommandOutput, RunResult


def invoke(run: Callable[[], RunResult[Any]], say: Callable[[str], None]) -> None:
    """A command's package function, bound to its parsed request (`run`), then `deliver`
    what it decided, its stderr lines said with `say`. BadOption and OptionConflict from
    the package become click's own usage errors (exit 2); any other error and a Ctrl-C go
    on to the console entry point (`gpusolve.cli.main`)."""
    from gpusolve.runs.output import BadOption, OptionConflict

    try:
        shown = run()
    except BadOption as exc:
        raise click.BadParameter(str(exc), param_hint=exc.option) from None
    except OptionConflict as exc:
        raise click.UsageError(str(exc)) from None
    deliver(shown.output, say)


def deliver(output: CommandOutput, say: Callable[[str], None]) -> None:
    """stderr lines before, stdout, the files (whole or not at all), stderr lines after;
    then exit with the output's code when it is not 0."""
    from gpusolve.atomic import write_bytes_atomic, write_text_atomic
    from gpusolve.errors import printable

    for line in output.before:
        say(printable(line))
    if output.stdout:
        echo(output.stdout, nl=False)
    for folder in output.folders:
        folder.mkdir(parents=True, exist_ok=True)
    for file in output.files:
        if isinstance(file.data, str):
            write_text_atomic(file.path, file.data)
        else:
            write_bytes_atomic(file.path, file.data, private=False)
        if file.note is not None:
            say(printable(file.note))
    for line in output.after:
        say(printable(line))
    if output.exit_code:
        sys.exit(output.exit_code)


def echo(text: str, *, nl: bool = True, err: bool = False) -> None:
    """Every line a command prints: without control characters (`printable`), so text
    from a catalogue or an input file cannot move the cursor, recolour the terminal or
    retitle its window."""
    from gpusolve.errors import printable

    click.echo(printable(text), nl=nl, err=err)
