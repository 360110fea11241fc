"""Options shared by several commands, defined once."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from gpusolve.commands.deliver import echo
from gpusolve.commands.settings import ENV, settings

# The exit codes of a command that finds no plan: every command's help ends with them.
EXIT_CODES = (
    "Exit codes: 0 done, 2 invalid input or usage (the message says where), 70 internal "
    "error (a bug: please report it), 130 interrupted (Ctrl-C or SIGTERM)."
)

# Where an option's default may come from (`settings.py`), for the help texts.
CONFIGS = "gpusolve.toml (this folder or one above) or ~/.config/gpusolve/config.toml"

F = TypeVar("F", bound=Callable[..., Any])


_NO_DEFAULT = "gpusolve.no_default_catalog"


def _remember_no_default(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    ctx.meta[_NO_DEFAULT] = value
    return value


def _catalogue_files(
    ctx: click.Context, _param: click.Parameter, value: tuple[Path, ...]
) -> tuple[Path, ...]:
    """The files a run reads, in order: the shipped catalogue, then the user's (which add
    items or `patch:` them); with --no-default-catalog, the user's alone."""
    from gpusolve.load.data import data_dir

    if ctx.meta.get(_NO_DEFAULT):
        if not value:
            raise click.UsageError("--no-default-catalog needs at least one --catalog FILE")
        return tuple(value)
    return (data_dir("catalog"), *value)


def catalog_option(func: F) -> F:
    """`--catalog FILE` (repeatable) adds to the shipped catalogue; `--no-default-catalog`
    drops the shipped one. The command receives the full, ordered list of paths."""
    func = click.option(
        "--catalog",
        "catalog_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        callback=_catalogue_files,
        envvar=ENV["catalog"],
        show_envvar=True,
        default=lambda: settings().catalog,
        help="Catalogue file or folder, read after the shipped catalogue (repeatable): it "
        "adds items, changes some fields of an item by id (`patch:`), or restates whole items "
        f"(`replace: true`). Default: the `catalog` key of {CONFIGS}.",
    )(func)
    return click.option(
        "--no-default-catalog",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_remember_no_default,
        help="Use only the --catalog files, not the shipped catalogue.",
    )(func)


def rules_option(func: F) -> F:
    return click.option(
        "--rules",
        "rules_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        envvar=ENV["rules"],
        show_envvar=True,
        default=lambda: settings().rules,
        help="Extra rule file or folder, applied after the shipped rules (repeatable). "
        f"Default: the `rules` key of {CONFIGS}.",
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


def require_output_for_html(fmt: str, output: Path | None) -> None:
    """An HTML report is a file to open in a browser, never a page of markup on a terminal."""
    if fmt == "html" and output is None:
        raise click.UsageError("--format html writes a file: add -o REPORT.html")


def progress_printer(quiet: bool) -> Callable[[str], None]:
    """Progress messages on stderr (stdout stays clean for the output), unless quiet."""

    def progress(message: str) -> None:
        if not quiet:
            echo(f"gpusolve: {message}", err=True)

    return progress


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange lets NaN through (every comparison with NaN is false) and
    accepts inf; a time limit, deadline factor or budget must be a finite number."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


# CP-SAT's random_seed is an int32 (SatParameters); 4294967296 crashed in the solver.
SEED_RANGE = click.IntRange(0, 2**31 - 1)


_OUTPUT_HELP = (
    "Write to this file (whole or not at all, only when the run succeeds) instead of stdout."
)


class OutputPath(click.Path):
    """A file to write: a name ending in a separator names a folder and is refused
    (`-o newdir/` wrote a file named newdir: the slash is gone once it is a Path)."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.endswith(("/", os.sep)):
            self.fail(
                f"{value!r} names a folder (it ends in '/'); name a file inside it",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


def output_option_with(help_text: str = _OUTPUT_HELP) -> Callable[[F], F]:
    """`-o/--output FILE`; commands may say what they write there."""

    def decorate(func: F) -> F:
        return click.option(
            "-o",
            "--output",
            type=OutputPath(),
            help=help_text,
        )(func)

    return decorate


output_option = output_option_with()


def time_limit_option(default_s: float | None, help_text: str) -> Callable[[F], F]:
    """`--time-limit SECONDS` for commands that solve; a finite number of at least 0.1."""

    def decorate(func: F) -> F:
        return click.option(
            "--time-limit",
            type=FiniteFloatRange(min=0.1),
            default=default_s,
            show_default=default_s is not None,
            help=help_text,
        )(func)

    return decorate


def work_limit_option(help_text: str) -> Callable[[F], F]:
    """`--work-limit UNITS`: CP-SAT's deterministic time, a finite number of at least 0.1;
    not given, the run's default (`runs`)."""

    def decorate(func: F) -> F:
        return click.option(
            "--work-limit",
            type=FiniteFloatRange(min=0.1),
            default=None,
            help=help_text,
        )(func)

    return decorate


def default_option(
    name: str, kind: click.ParamType[Any], default: object, help_text: str
) -> Callable[[F], F]:
    """An option with a bounded value (a range or a choice) whose default `--help` shows."""
    return click.option(name, type=kind, default=default, show_default=True, help=help_text)


def quiet_option(func: F) -> F:
    return click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")(func)


def check_launch_folder(folder: Path | None) -> None:
    """--launch DIR: a folder (made if missing) whose parent exists, before any work."""
    if folder is None:
        return
    from gpusolve.errors import InputError

    target = Path(os.path.realpath(folder))
    if target.exists() and not target.is_dir():
        raise InputError.single(str(folder), "--launch names a file", hint="name a folder")
    if not target.parent.is_dir():
        raise InputError.single(
            str(folder),
            f"the folder {target.parent} does not exist",
            hint="create it first or choose another --launch folder",
        )


def check_output(output: Path | None, inputs: Sequence[Path]) -> None:
    """Refuse an -o that would destroy an input or cannot be written, before any work."""
    if output is None:
        return
    from gpusolve.atomic import check_replaceable
    from gpusolve.errors import InputError

    target = Path(os.path.realpath(output))
    for path in inputs:
        if path.exists() and target.exists() and os.path.samefile(target, path):
            raise InputError.single(
                str(output),
                f"-o names the input file {path}; writing there would destroy it",
                hint="choose another output file",
            )
    if target.is_dir():
        raise InputError.single(str(output), "-o is a directory", hint="name a file inside it")
    check_replaceable(output)
    if not target.parent.is_dir():
        raise InputError.single(
            str(output),
            f"the folder {target.parent} does not exist",
            hint="create it first or choose another output file",
        )
