"""`gpusolve estimate`: the workload physics alone — memory, step time by part, bottleneck.

The command parses the options and hands them to `gpusolve.runs.estimate`, which loads
through the same pipeline as `plan`, builds the report and renders it.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import click

from gpusolve.commands.options import (
    EXIT_CODES,
    catalog_option,
    format_option,
    output_option_with,
    rules_option,
)
from gpusolve.models.requirements import Checkpointing, Sharding

HELP = """\
Memory per GPU, step time by part, MFU and bottleneck for each workload (no prices).

\b
For every workload in REQS.yaml and every catalogue card (or --card), prints:
  * memory per GPU: weights, gathered ZeRO-3 layers, gradients, optimizer,
    activations, KV cache, runtime overhead, total, against the memory the
    device reports less the workload's headroom (the requirements' `headroom`,
    else the rules': 20%, 25% for day/night sharing, H29);
  * training: one step's time from its parts (compute, recomputation, exposed
    TP/CP/EP/PP/DP communication, pipeline bubble, optimizer) and the MFU/HFU
    that result, the run's time, tokens/s, checkpoint size and stall;
  * serving: the batch per replica and what bounds it (memory or the TPOT
    target), the mean live context, TPOT, TTFT, single-stream speed, the
    decode step's parts; with a `request_rate`, TTFT and TPOT at P50/P90/P99
    and goodput from a seeded simulation of the engine's scheduler;
  * the documents' rules of thumb (H05, H30), labelled as such.

\b
Without layout options: the smallest feasible configuration per card (and the
smallest that meets the deadline, when that differs). With any of them: exactly
that configuration on each card; unset parts come from the workload.

\b
Each card is sized in the catalogue's server for it with the most GPUs (else a
cloud instance, else 8 cards with no inter-node fabric).

\b
Units: GB means 10^9 bytes; time in hours (step parts in seconds); throughput
in tokens/s.
Examples:
  gpusolve estimate examples/finetune-7b-deadline.yaml
  gpusolve estimate reqs.yaml --card h100-sxm --gpus 8 --tp 2 --zero 1 --format json
  gpusolve estimate reqs.yaml --card a100-80gb-sxm --gpus 64 --tp 8 --pp 8 --vp 3 \\
      --recompute selective
"""


@click.command("estimate", help=HELP, epilog=EXIT_CODES)
@click.argument("reqs_path", metavar="REQS.yaml", type=click.Path(path_type=Path))
@click.option("--card", "card_ids", multiple=True, help="Only this card id (repeatable).")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs in total (explicit layout).")
@click.option("--tp", type=click.IntRange(min=1), help="Tensor-parallel degree (inside a node).")
@click.option("--pp", type=click.IntRange(min=1), help="Pipeline-parallel degree.")
@click.option(
    "--vp", type=click.IntRange(min=1), help="Virtual stages per pipeline rank (interleaved)."
)
@click.option(
    "--cp", type=click.IntRange(min=1), help="Context-parallel degree (splits the sequence)."
)
@click.option(
    "--ep", type=click.IntRange(min=1), help="Expert-parallel degree (MoE; may span nodes)."
)
@click.option(
    "--attention-dp",
    is_flag=True,
    default=None,
    help="Serving an MoE model: each of the replica's --tp ranks attends its own sequences "
    "with whole attention weights, experts spread whole over the ranks (EP = TP; may span "
    "nodes), tokens sent to their experts and back.",
)
@click.option(
    "--sp/--no-sp",
    "sequence_parallel",
    default=None,
    help="Sequence parallelism with TP (on by default).",
)
@click.option(
    "--zero",
    type=click.IntRange(min=0, max=3),
    help="ZeRO stage: 0 = DDP, 1 (the distributed optimizer), 2, 3 (ZeRO-3 / FSDP full).",
)
@click.option(
    "--sharding",
    type=click.Choice(get_args(Sharding)),
    help="Data-parallel sharding by name (overrides --zero).",
)
@click.option("--micro-batch", type=click.IntRange(min=1), help="Sequences per GPU per micro-step.")
@click.option(
    "--recompute",
    type=click.Choice(get_args(Checkpointing)),
    help="Activation recomputation.",
)
@catalog_option
@rules_option
@format_option("text", "json", "html")
@output_option_with("Write to this file instead of standard output.")
def estimate(
    reqs_path: Path,
    card_ids: tuple[str, ...],
    gpus: int | None,
    tp: int | None,
    pp: int | None,
    vp: int | None,
    cp: int | None,
    ep: int | None,
    attention_dp: bool | None,
    sequence_parallel: bool | None,
    zero: int | None,
    sharding: str | None,
    micro_batch: int | None,
    recompute: str | None,
    catalog_paths: tuple[Path, ...],
    rules_paths: tuple[Path, ...],
    fmt: str,
    output: Path | None,
) -> None:
    from gpusolve.commands.deliver import echo, invoke
    from gpusolve.commands.options import check_output, require_output_for_html
    from gpusolve.runs.estimate import EstimateRequest, LayoutChoice, run_estimate

    require_output_for_html(fmt, output)
    check_output(output, [reqs_path, *catalog_paths, *rules_paths])
    layout = LayoutChoice(
        gpus=gpus,
        tp=tp,
        pp=pp,
        zero=zero,
        sharding=sharding,
        vp=vp,
        cp=cp,
        ep=ep,
        attention_dp=attention_dp or None,
        sequence_parallel=sequence_parallel,
        micro_batch=micro_batch,
        recompute=recompute,
    )
    request = EstimateRequest(
        reqs_path, catalog_paths, rules_paths, card_ids, layout, fmt=fmt, output=output
    )
    # "wrote PATH" goes to stderr as it is, with no "gpusolve:" prefix.
    invoke(lambda: run_estimate(request), lambda line: echo(line, err=True))
