"""The `gpusolve` command line: composes the pipeline stages, nothing more.

Sub-commands live in `gpusolve.commands.*` and are imported only when invoked, so
`gpusolve --help` stays fast and never imports ortools.
"""

from __future__ import annotations

import atexit
import functools
import gc
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from gpusolve import __version__
from gpusolve.errors import InputError, printable

# name -> (module, attribute, one-line help shown by `gpusolve --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "plan": ("gpusolve.commands.plan", "plan", "Cheapest plan that meets every workload."),
    "frontier": (
        "gpusolve.commands.frontier",
        "frontier",
        "Cost <-> time-to-train frontier: what finishing sooner costs.",
    ),
    "estimate": (
        "gpusolve.commands.estimate",
        "estimate",
        "Memory, FLOPs, time and bottleneck per workload (no prices).",
    ),
    "colo": (
        "gpusolve.commands.colo",
        "colo",
        "Rank colocation offers for a fleet of servers: racks, cost, why not.",
    ),
    "catalog": ("gpusolve.commands.catalog", "catalog", "Validate, list and show the catalogue."),
    "rules": ("gpusolve.commands.rules", "rules", "List, show, check and explain sizing rules."),
    "schema": ("gpusolve.commands.schema", "schema", "Print or write the JSON Schemas."),
    "profile": (
        "gpusolve.commands.profile",
        "profile",
        "Read an nvidia-smi log: what bounds the job.",
    ),
    "measure": ("gpusolve.commands.measure", "measure", "Time a workload's model with PyTorch."),
}

MAX_PROBLEMS_SHOWN = 12
INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h)


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n, spec in COMMANDS.items() if _available(spec[0]))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None or not _available(spec[0]):
            return None
        module = importlib.import_module(spec[0])
        command = getattr(module, spec[1])
        assert isinstance(command, click.Command)
        if command.callback is not None and cmd_name not in _COLLECTING_IN:
            _COLLECTING_IN.add(cmd_name)
            command.callback = _collecting(command.callback)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, COMMANDS[n][2]) for n in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# The sub-commands whose callback turns the collector back on (`runs/collector.py`):
# `plan` does so itself, once its planner is imported.
_COLLECTING_IN: set[str] = {"plan"}


def _collecting(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        from gpusolve.runs import collector

        collector.resume()
        return callback(*args, **kwargs)

    return run


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


HELP = """\
Plan what GPU hardware to buy or rent, and where to host it.

\b
Describe your workloads in YAML (see the shipped examples), then:
  gpusolve plan examples/finetune-7b-deadline.yaml      cheapest plan
  gpusolve estimate examples/finetune-7b-deadline.yaml  memory/time per GPU
  gpusolve catalog list --kind cards                    what is in the catalogue
  gpusolve rules explain REQS.yaml                      which heuristics fire

Units: GB means 10^9 bytes; power in kW; money in the run's single currency
(CNY unless the files say otherwise). Exit codes: 0 ok, 1 no feasible plan (proven),
2 invalid input or usage, 3 no plan found within --time-limit (none proven impossible),
130 interrupted (Ctrl-C or SIGTERM), 70 internal error (a bug: please report it).
Input files are data, never code: see SECURITY.md.

\b
Defaults a team sets once: the catalogues and rules it adds, and a market,
  in gpusolve.toml (this folder or one above) or ~/.config/gpusolve/config.toml:
    catalog = ["quotes/"]   rules = ["our-rules.yaml"]   market = "cn"
  or in GPUSOLVE_CATALOG, GPUSOLVE_RULES (paths joined by ':'), GPUSOLVE_MARKET;
  the command line wins, then the environment, then the project's file, then the
  user's. GPUSOLVE_CONFIG=FILE reads that file alone (empty: none).
Shell completion (bash): eval "$(_GPUSOLVE_COMPLETE=bash_source gpusolve)".
"""

# -v: where the defaults came from, and an internal error's traceback.
_verbose: list[bool] = [False]


@click.group(cls=LazyGroup, help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpusolve")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Say which config files and environment variables set defaults, and show an "
    "internal error's traceback.",
)
def cli(verbose: bool) -> None:
    _verbose[0] = verbose
    if verbose:
        from gpusolve.commands.settings import sources

        for line in sources():
            click.echo(f"gpusolve: {line}", err=True)


# A run allocates hundreds of thousands of objects that live until it ends (the catalogue's
# models, every candidate layout); at Python's default first threshold (700) the collector
# walks them over and over, ~6% of `plan`'s wall time on the examples. Collecting every
# 50,000 allocations instead frees the same cycles later; nothing the run prints changes.
GC_THRESHOLD = (50_000, 10, 10)
INTERRUPTED = 130  # the exit code of Ctrl-C or SIGTERM


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: user mistakes become messages and exit 2, never tracebacks."""
    from gpusolve.runs import collector

    if argv is None:  # the process's own command line: `gpusolve`, `python -m gpusolve`
        atexit.register(_exit_without_collecting)
        collector.pause()
    # Both packages import the loaders and every model: after the pause.
    from gpusolve.candidates import layout_cache
    from gpusolve.load import document_cache

    previous = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        # Layout searches and parsed YAML files: the command keeps them between runs.
        with layout_cache.kept_between_runs(), document_cache.kept_between_runs():
            return _main(argv)
    except SystemExit as exc:
        if exc.code == INTERRUPTED:
            # A process pool stopped by Ctrl-C must be finalised before the interpreter's
            # exit hooks run, as the default threshold would have done by now, or
            # concurrent.futures' hook wakes its manager through a closed pipe and prints a
            # traceback (tests/test_pool_signals.py failed one run in two without this).
            gc.collect()
        raise
    finally:
        collector.resume()
        gc.set_threshold(*previous)  # an in-process caller (a test) keeps its own


def _exit_without_collecting() -> None:
    """The last exit hook of a command's process (hooks run last registered first).

    At exit the interpreter looks for reference cycles among every object still alive
    (ortools, pandas and numpy, the catalogue's models): about 0.1 s of CPU at the end of
    `plan` on the README's first example (benchmarks/README.md, "Start-up"), to free
    memory the operating system takes back anyway. Frozen objects are never examined.
    Nothing is lost by it: every file the command writes is closed before this runs
    (`atomic.py`, the caches' own exit hooks), the interpreter flushes the standard
    streams regardless, and a process pool stopped by Ctrl-C is collected in `main`."""
    gc.freeze()


def _main(argv: list[str] | None) -> Any:
    _verbose[0] = False
    try:
        return cli.main(args=argv, prog_name="gpusolve", standalone_mode=False)
    except InputError as exc:
        report_problems(exc)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(INTERRUPTED)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(INTERRUPTED)
    except BrokenPipeError:
        sys.exit(0)
    except RecursionError:
        click.echo("error: the input is nested too deeply to process; flatten it", err=True)
        sys.exit(2)
    except MemoryError:
        click.echo("error: out of memory; the input asks for more than this machine has", err=True)
        sys.exit(2)
    except Exception as exc:
        # Never a traceback for a user: a one-line message and exit 70 (EX_SOFTWARE). The
        # fuzzing suite (tests/fuzz) fails on exit 70, so every such case becomes a bug
        # with a regression test. GPUSOLVE_DEBUG=1 shows the traceback.
        if os.environ.get("GPUSOLVE_DEBUG") or _verbose[0]:
            raise
        click.echo(
            printable(
                f"gpusolve: internal error ({type(exc).__name__}: {exc}); this is a bug, "
                "please report it with the input files (GPUSOLVE_DEBUG=1 shows the traceback)"
            ),
            err=True,
        )
        sys.exit(INTERNAL_ERROR)


def report_problems(exc: InputError) -> None:
    problems = exc.problems
    for p in problems[:MAX_PROBLEMS_SHOWN]:
        click.echo(f"error: {p.render()}", err=True)
    if len(problems) > MAX_PROBLEMS_SHOWN:
        click.echo(f"... and {len(problems) - MAX_PROBLEMS_SHOWN} more problems", err=True)
