"""`gpusolve measure`: run a workload's model for a few steps with PyTorch (optional extra)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpusolve.commands.options import catalog_option
from gpusolve.errors import InputError

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


@click.command("measure", help=HELP)
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
    from gpusolve.load import load_requirements_doc
    from gpusolve.measure import require_torch

    reqs, doc = load_requirements_doc(reqs_path)
    names = [w.name for w in reqs.workloads]
    if name not in names:
        raise InputError.single(
            str(reqs_path), f"no workload named {name!r}", hint=f"one of {', '.join(names)}"
        )
    index = names.index(name)
    require_torch()
    card = None
    from gpusolve.load.catalog import load_catalog

    cards = load_catalog(list(catalog_paths)).catalog.cards
    if card_id is not None:
        card = cards.get(card_id)
        if card is None:
            raise InputError.single(
                "--card",
                f"unknown card {card_id!r}",
                hint="see `gpusolve catalog list --kind cards`",
            )
    if update and card is None:
        raise InputError.single(
            "--update", "the measured: block needs the card", hint="give --card ID"
        )
    from gpusolve.measure.session import Options
    from gpusolve.measure.session import measure as run_measure
    from gpusolve.params import Params

    params = Params()
    if reqs.headroom is not None:
        params = params.with_values(headroom=reqs.headroom)
    opts = Options(
        steps=steps,
        warmup=warmup,
        device=device,
        layers=layers,
        micro_batch=micro_batch,
        seq_len=seq_len,
    )
    report = run_measure(reqs.workloads[index], card, params, opts, str(reqs_path))
    if update and report.measured is not None:
        _update(reqs_path, doc, index, report.measured)
    if fmt == "json":
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2))
        return
    from gpusolve.measure.block import block_lines

    for note in report.notes:
        click.echo(f"# note: {note}")
    s, f = report.counted_states, report.formula_states
    click.echo(
        f"# model states: PyTorch holds {s.weights + s.gradients + s.optimizer:,.0f} bytes, "
        f"the physics says {f.weights + f.gradients + f.optimizer:,.0f}"
    )
    click.echo(
        f"# activations saved for backward: {report.saved_activation_bytes:,.0f} bytes, the "
        f"formula says {report.formula_activation_bytes:,.0f}"
    )
    click.echo(f"# {report.tokens_per_s:,.1f} tokens/s on {report.device}")
    if report.measured is not None:
        click.echo("\n".join(block_lines(report.measured, 0)))
        if update:
            click.echo(f"# written into {reqs_path} (workload {name})")


def _update(path: Path, doc: object, index: int, block: object) -> None:
    from gpusolve.atomic import write_text_atomic
    from gpusolve.load import load_requirements_doc
    from gpusolve.load.yamlio import Document
    from gpusolve.measure.block import with_block
    from gpusolve.models.requirements import Measured

    assert isinstance(doc, Document) and isinstance(block, Measured)
    text = path.read_text(encoding="utf-8")
    new = with_block(text, doc, index, block)
    probe = path.with_name(f".{path.name}.measure-check.yaml")
    try:
        probe.write_text(new, encoding="utf-8")
        load_requirements_doc(probe)  # never write a file that no longer loads
    except InputError as exc:
        raise InputError.single(
            str(path),
            f"could not insert the measured: block ({exc})",
            hint="paste the printed block by hand",
        ) from None
    finally:
        probe.unlink(missing_ok=True)
    write_text_atomic(path, new)
