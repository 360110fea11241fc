"""`gpusolve profile`: read an nvidia-smi log and say what bounds the job (H11, H17, H29)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpusolve.commands.deliver import echo
from gpusolve.commands.options import EXIT_CODES, catalog_option, format_option
from gpusolve.errors import InputError
from gpusolve.models.params import Params

HELP = """\
Summarise an nvidia-smi log per GPU and overall, and classify the job (H11).

\b
LOG is either
  * `nvidia-smi dmon` output (any -s selection, with or without -o DT; the
    header lines name the columns, '-' is "not available", several GPUs
    interleave, header blocks may repeat), e.g.
        nvidia-smi dmon -s pucvmet -o DT -d 1 > run.log
  * `nvidia-smi --query-gpu=... --format=csv` output with its header line, e.g.
        nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,\\
          memory.used,memory.total,power.draw,temperature.gpu,clocks.sm \\
          --format=csv -l 1 > run.csv

\b
Prints time-weighted SM and memory activity, memory used, power (against the
card's TDP with --card), temperatures, clocks and violation counters; the
class: compute-bound, memory-bandwidth-bound, stalled on input or
communication (H04, H11), mixed or idle; warnings for temperatures above
85 °C and SM clocks dropping under load (H17) and memory above the headroom
(H29). The thresholds are rule parameters (see `gpusolve rules fields`); change
one here with --param, e.g. --param thermal_warning_c=83 --param headroom=0.3.
"""


@click.command("profile", help=HELP, epilog=EXIT_CODES)
@click.argument("log_path", metavar="LOG", type=click.Path(path_type=Path))
@click.option("--card", "card_id", help="The card the log was recorded on (a catalogue id).")
@click.option(
    "--param",
    "param_values",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set a threshold parameter (repeatable), e.g. profile_compute_sm_min=0.85.",
)
@catalog_option
@format_option("text", "json")
def profile(
    log_path: Path,
    card_id: str | None,
    param_values: tuple[str, ...],
    catalog_paths: tuple[Path, ...],
    fmt: str,
) -> None:
    from gpusolve.profile import analyse_file
    from gpusolve.render.profile import profile_text

    card = None
    if card_id is not None:
        from gpusolve.load.catalog import load_catalog

        card = load_catalog(list(catalog_paths)).catalog.cards.get(card_id)
        if card is None:
            raise InputError.single(
                "--card",
                f"unknown card {card_id!r}",
                hint="use a card id from `gpusolve catalog list --kind cards`",
            )
    report = analyse_file(log_path, card, parse_params(param_values))
    if fmt == "json":
        echo(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        echo(profile_text(report))


def parse_params(values: tuple[str, ...]) -> Params:
    """`NAME=VALUE` pairs (YAML scalars) into Params; a bad one is exit 2."""
    import yaml

    from gpusolve.models.params import check_value

    chosen: dict[str, object] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        try:
            if not sep:
                raise ValueError("write NAME=VALUE")
            chosen[name.strip()] = check_value(name.strip(), yaml.safe_load(raw))
        except (ValueError, yaml.YAMLError) as exc:
            raise InputError.single("--param", f"{item!r}: {exc}") from None
    return Params().with_values(**chosen)
