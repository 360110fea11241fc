"""`gpusolve measure`: run a workload's model for a few steps with PyTorch (optional extra)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpusolve.commands.deliver import echo
from gpusolve.commands.options import EXIT_CODES, catalog_option

HELP = """\
Time a workload's own model with PyTorch and write its `measured:` block (H12).

\b
Builds a decoder-only transformer of the workload's shape (dense, GQA; --layers
builds fewer and scales back), runs --steps steps after a warm-up with the
workload's precision, optimizer, micro-batch and checkpointing, and prints the
`measured:` block (tokens/s, MFU against --card's dense peak, peak allocated
and reserved memory per GPU) to paste under the workload, or writes it into
REQS.yaml with --update (atomically; comments are kept). It also compares the
model-state bytes PyTorch holds with the physics' (they match exactly) and the
activation bytes autograd saves with the formula's.

\b
Needs the optional extra: pip install 'gpusolve[measure]'.
Examples:
  gpusolve measure reqs.yaml --workload pretrain-1b --card h100-sxm --steps 20
  gpusolve measure reqs.yaml --workload tiny --device cpu --steps 2 --format json
"""


@click.command("measure", help=HELP, epilog=EXIT_CODES)
@click.argument("reqs_path", metavar="REQS.yaml", type=click.Path(path_type=Path))
@click.option("--workload", "name", required=True, help="The workload to measure.")
@click.option("--steps", type=click.IntRange(min=1, max=10000), default=20, show_default=True)
@click.option("--warmup", type=click.IntRange(min=1, max=1000), default=2, show_default=True)
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True)
@click.option("--card", "card_id", help="The catalogue card the device is (for MFU and the block).")
@click.option("--layers", type=click.IntRange(min=1), help="Build fewer layers and scale back.")
@click.option("--micro-batch", type=click.IntRange(min=1), help="Override the micro-batch.")
@click.option("--seq-len", type=click.IntRange(min=1), help="Override the sequence length.")
@click.option("--update", is_flag=True, help="Write the block into REQS.yaml (atomically).")
@click.option(
    "--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True
)
@catalog_option
def measure(
    reqs_path: Path,
    name: str,
    steps: int,
    warmup: int,
    device: str,
    card_id: str | None,
    layers: int | None,
    micro_batch: int | None,
    seq_len: int | None,
    update: bool,
    fmt: str,
    catalog_paths: tuple[Path, ...],
) -> None:
    from gpusolve.measure.run import MeasureRequest, measure_from_file
    from gpusolve.measure.session import Options
    from gpusolve.render.measure import measure_text

    opts = Options(
        steps=steps,
        warmup=warmup,
        device=device,
        layers=layers,
        micro_batch=micro_batch,
        seq_len=seq_len,
    )
    request = MeasureRequest(reqs_path, name, card_id, catalog_paths, opts, update)
    report = measure_from_file(request)
    if fmt == "json":
        echo(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return
    echo(measure_text(report, reqs_path if update else None, name), nl=False)
