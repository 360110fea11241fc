"""Options shared by several commands, defined once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def catalog_option(func: F) -> F:
    return click.option(
        "--catalog",
        "catalog_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Catalogue file or folder (repeatable). Default: the shipped catalogue.",
    )(func)


def rules_option(func: F) -> F:
    return click.option(
        "--rules",
        "rules_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Extra rule file or folder, applied after the shipped rules (repeatable).",
    )(func)


def format_option(*choices: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(list(choices)),
            default=choices[0],
            show_default=True,
            help="Output format.",
        )(func)

    return decorate


def progress_printer(quiet: bool) -> Callable[[str], None]:
    """Progress messages on stderr (stdout stays clean for the output), unless quiet."""

    def progress(message: str) -> None:
        if not quiet:
            click.echo(f"gpusolve: {message}", err=True)

    return progress
