"""Carry out what a package function decided a command shows (`gpusolve.runs.output`),
and report the option errors it found as click reports its own."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from gpusolve.runs.output import CommandOutput


def deliver(output: CommandOutput, say: Callable[[str], None]) -> None:
    """stderr lines before, stdout, the files (whole or not at all), stderr lines after;
    then exit with the output's code when it is not 0."""
    from gpusolve.atomic import write_bytes_atomic, write_text_atomic

    for line in output.before:
        say(line)
    if output.stdout:
        click.echo(output.stdout, nl=False)
    for file in output.files:
        if isinstance(file.data, str):
            write_text_atomic(file.path, file.data)
        else:
            write_bytes_atomic(file.path, file.data, private=False)
        if file.note is not None:
            say(file.note)
    for line in output.after:
        say(line)
    if output.exit_code:
        sys.exit(output.exit_code)


@contextmanager
def option_errors() -> Iterator[None]:
    """BadOption and OptionConflict from the package, as click's own usage errors (exit 2)."""
    from gpusolve.runs.output import BadOption, OptionConflict

    try:
        yield
    except BadOption as exc:
        raise click.BadParameter(str(exc), param_hint=exc.option) from None
    except OptionConflict as exc:
        raise click.UsageError(str(exc)) from None
