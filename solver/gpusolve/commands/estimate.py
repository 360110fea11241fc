"""`gpusolve estimate`: the workload physics alone — memory, FLOPs, time, bottleneck.

No prices and no solver: for each workload and catalogue card, the memory breakdown per
GPU, whether it fits with the configured headroom, the time to train, the communication
share, the checkpoint stall and the bottleneck class — next to the documents' rules of
thumb, labelled as such.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import click

from gpusolve.commands.options import catalog_option, format_option, rules_option
from gpusolve.estimate import (
    ConfigEstimate,
    Hardware,
    Layout,
    evaluate,
    resolve_arch,
    search_layouts,
    thumb_figures,
    whole_model_memory,
)
from gpusolve.estimate.layout import replica_nodes
from gpusolve.estimate.search import max_decode_batch
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.units import GB
from gpusolve.models.catalog import Card, Catalog
from gpusolve.models.estimate import (
    ArchOut,
    ConfigOut,
    EstimateReport,
    MemoryGB,
    ThumbOut,
    WorkloadEstimate,
)
from gpusolve.models.requirements import Requirements, Workload
from gpusolve.params import Params

ZERO_SHARDING = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}

HELP = """\
Memory per GPU, FLOPs, time and bottleneck for each workload (no prices).

\b
For every workload in REQS.yaml and every catalogue card (or --card), prints the
memory breakdown per GPU (weights, gradients, optimizer, activations, KV cache,
overhead, total), whether it fits with the headroom (the requirements' `headroom`,
else the rules', 20% by default), the FLOPs, the time for one run, the communication
share of step time, the checkpoint size and stall, and the bottleneck (compute, memory
bandwidth or communication). Next to the formula it prints the documents' rules of thumb
(H05: 16-24 bytes/param; H30: params_b x factor), labelled as such.

\b
Without --gpus/--tp/--pp/--zero: the smallest feasible configuration per card
(and the smallest that meets the deadline, when that differs). With any of them:
exactly that one configuration on each card.

\b
Each card is sized in the catalogue's server for it with the most GPUs (else a
cloud instance, else 8 cards with no inter-node fabric).

\b
Units: GB means 10^9 bytes everywhere; time in hours; throughput in tokens/s.
Examples:
  gpusolve estimate examples/finetune-7b-deadline.yaml
  gpusolve estimate reqs.yaml --card h100-sxm --gpus 8 --tp 2 --zero 1 --format json
"""


@click.command("estimate", help=HELP)
@click.argument("reqs_path", metavar="REQS.yaml", type=click.Path(path_type=Path))
@click.option("--card", "card_ids", multiple=True, help="Only this card id (repeatable).")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs in total (explicit layout).")
@click.option("--tp", type=click.IntRange(min=1), help="Tensor-parallel degree.")
@click.option("--pp", type=click.IntRange(min=1), help="Pipeline-parallel degree.")
@click.option(
    "--zero",
    type=click.IntRange(min=0, max=3),
    help="ZeRO stage: 0 = DDP, 1, 2, 3 (3 = ZeRO-3 / FSDP full).",
)
@catalog_option
@rules_option
@format_option("text", "json")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this file instead of standard output.",
)
def estimate(
    reqs_path: Path,
    card_ids: tuple[str, ...],
    gpus: int | None,
    tp: int | None,
    pp: int | None,
    zero: int | None,
    catalog_paths: tuple[Path, ...],
    rules_paths: tuple[Path, ...],
    fmt: str,
    output: Path | None,
) -> None:
    from gpusolve.load import check_against_catalog, load_catalog, load_requirements_doc
    from gpusolve.rules.policy import evaluate_policies

    reqs, doc = load_requirements_doc(reqs_path)
    catalog = load_catalog(list(catalog_paths) or None).catalog
    check_against_catalog(reqs, doc, catalog)
    # The same parameters `plan` uses: defaults, then the rules, then the user's headroom.
    policies, _ = evaluate_policies(reqs, catalog, list(rules_paths))
    per_workload = {name: policy.params for name, policy in policies.items()}
    cards = _cards(catalog, card_ids)
    explicit = any(v is not None for v in (gpus, tp, pp, zero))
    report = build_report(
        reqs,
        catalog,
        cards,
        Params(),
        explicit=explicit,
        gpus=gpus,
        tp=tp,
        pp=pp,
        zero=zero,
        per_workload=per_workload,
    )
    if fmt == "json":
        text = json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    else:
        text = render_text(report)
    if output is not None:
        from gpusolve.atomic import write_text_atomic

        write_text_atomic(output, text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


def _cards(catalog: Catalog, card_ids: tuple[str, ...]) -> list[Card]:
    if not card_ids:
        return list(catalog.cards.values())
    unknown = [c for c in card_ids if c not in catalog.cards]
    if unknown:
        raise click.BadParameter(
            f"unknown card {', '.join(unknown)}; known cards: {', '.join(catalog.cards)}",
            param_hint="--card",
        )
    return [catalog.cards[c] for c in card_ids]


def hardware_for(catalog: Catalog, card: Card) -> Hardware:
    """The node a card is sized in: the catalogue server with the most of these cards (then
    the fastest peer link), else the largest cloud instance, else 8 generic cards."""
    servers = [s for s in catalog.servers.values() if s.card == card.id]
    if servers:
        best = max(servers, key=lambda s: (s.gpus, s.peer_bandwidth_gbs, s.fabric.total_gbps))
        return Hardware.from_server(best, card)
    offers = [o for o in catalog.cloud_offers.values() if o.card == card.id]
    if offers:
        offer = max(offers, key=lambda o: (o.gpus_per_instance, o.peer_bandwidth_gbs))
        return Hardware.from_cloud(offer, card)
    return Hardware.generic(card)


def explicit_layout(
    w: Workload,
    hw: Hardware,
    params: Params,
    *,
    gpus: int | None,
    tp: int | None,
    pp: int | None,
    zero: int | None,
) -> Layout:
    """The one layout the command line describes; unset parts come from the workload."""
    t, p = tp or 1, pp or 1
    total = gpus or t * p
    if total % (t * p):
        raise click.BadParameter(
            f"--gpus {total} is not a multiple of TP × PP = {t * p}", param_hint="--gpus"
        )
    dp = total // (t * p)
    if w.kind == "inference":
        b_max = max(1, max_decode_batch(w, hw, params, t, p))
        batch = b_max if w.concurrency is None else min(b_max, math.ceil(w.concurrency / dp))
        lay = Layout(nodes=1, tp=t, pp=p, dp=1, micro_batch=batch, replicas=dp)
        return Layout(
            nodes=replica_nodes(lay, hw.gpus_per_node),
            tp=t,
            pp=p,
            dp=1,
            micro_batch=batch,
            replicas=dp,
        )
    sharding = ZERO_SHARDING[zero] if zero is not None else (w.sharding or "ddp")
    accum = math.ceil(w.global_batch / (dp * w.micro_batch)) if w.global_batch else 1
    return Layout(
        nodes=math.ceil(total / hw.gpus_per_node),
        tp=t,
        pp=p,
        dp=dp,
        sharding=sharding,
        checkpointing=w.gradient_checkpointing or "none",
        micro_batch=w.micro_batch,
        grad_accum=max(1, accum),
    )


# ---------------------------------------------------------------- report


def build_report(
    reqs: Requirements,
    catalog: Catalog,
    cards: list[Card],
    params: Params,
    *,
    explicit: bool,
    gpus: int | None = None,
    tp: int | None = None,
    pp: int | None = None,
    zero: int | None = None,
    per_workload: Mapping[str, Params] | None = None,
) -> EstimateReport:
    """The report for every workload on every card. `params` applies to all workloads
    unless `per_workload` gives a workload its own (e.g. rule-resolved) parameters."""
    base = params
    workloads: list[WorkloadEstimate] = []
    for w in reqs.workloads:
        params = (per_workload or {}).get(w.name, base)
        arch = resolve_arch(w.model)
        configs: list[ConfigOut] = []
        rejections: list[str] = []
        fits_on: list[str] = []
        for card in cards:
            hw = hardware_for(catalog, card)
            if explicit:
                lay = explicit_layout(w, hw, params, gpus=gpus, tp=tp, pp=pp, zero=zero)
                est = evaluate(w, hw, lay, params)
                configs.append(config_out(est, w))
                if est.feasible:
                    fits_on.append(card.id)
                continue
            result = search_layouts(w, hw, params, max_nodes=params.max_nodes, whole_nodes=False)
            if not result.feasible:
                rejections += [f"{card.id}: {r}" for r in result.rejections[:2]] or [
                    f"{card.id}: no layout fits"
                ]
                continue
            fits_on.append(card.id)
            chosen = [result.feasible[0]]
            if w.deadline_hours is not None and not chosen[0].meets_deadline:
                meeting = [e for e in result.feasible if e.meets_deadline]
                if meeting:
                    chosen.append(meeting[0])
                else:
                    rejections += [f"{card.id}: {r}" for r in result.rejections if "deadline" in r]
            configs += [config_out(e, w) for e in chosen]
        workloads.append(
            WorkloadEstimate(
                name=w.name,
                kind=w.kind,
                precision=w.precision,
                optimizer=w.optimizer,
                tokens=w.tokens,
                deadline_h=w.deadline_hours,
                arch=arch_out(arch, w),
                thumb=thumb_out(arch, w, params),
                fits_on=fits_on,
                configs=configs,
                rejections=rejections,
            )
        )
    return EstimateReport(
        headroom=base.headroom, mode="explicit" if explicit else "search", workloads=workloads
    )


def arch_out(arch: Arch, w: Workload) -> ArchOut:
    return ArchOut(
        preset=arch.name,
        params_b=arch.params / 1e9,
        active_params_b=arch.active_params / 1e9,
        layers=arch.layers,
        hidden=arch.hidden,
        heads=arch.heads,
        kv_heads=arch.kv_heads,
        head_dim=arch.head_dim,
        ffn=arch.ffn,
        vocab=arch.vocab,
        experts=arch.experts,
        active_experts=arch.active_experts,
        coarse=arch.coarse,
        derivation=arch.convention,
        assumptions=list(arch.assumptions),
    )


def thumb_out(arch: Arch, w: Workload, params: Params) -> ThumbOut:
    # The rules of thumb take the size as the user states it (params_b), else the shape's.
    params_b = w.model.params_b if w.model.params_b is not None else arch.params / 1e9
    t = thumb_figures(params_b, w.kind, params)
    whole = whole_model_memory(w, params)
    return ThumbOut(
        h30_class=t.h30_class,
        h30_factor=t.h30_factor,
        h30_range=t.h30_range,
        h30_gb=t.h30_bytes / GB,
        h05_low_gb=None if t.h05_low_bytes is None else t.h05_low_bytes / GB,
        h05_high_gb=None if t.h05_high_bytes is None else t.h05_high_bytes / GB,
        formula_whole_model_gb=whole.total_bytes / GB,
        formula_model_states_gb=(
            whole.weights_bytes + whole.gradients_bytes + whole.optimizer_bytes
        )
        / GB,
    )


def config_out(e: ConfigEstimate, w: Workload) -> ConfigOut:
    lay = e.layout
    mem = e.memory.as_gb()
    return ConfigOut(
        card=e.card,
        hardware=e.hardware,
        gpus=e.gpus,
        nodes=e.nodes,
        tp=lay.tp,
        pp=lay.pp,
        dp=lay.dp,
        ep=lay.ep,
        replicas=lay.replicas,
        zero_stage=lay.zero_stage,
        sharding=lay.sharding,
        gradient_checkpointing=lay.checkpointing,
        micro_batch=lay.micro_batch,
        grad_accum=lay.grad_accum,
        memory_per_gpu_gb=MemoryGB(**mem),
        memory_capacity_gb=e.capacity_bytes / GB,
        headroom=e.headroom,
        fits=e.fits,
        feasible=e.feasible,
        flops=e.flops,
        time_to_train_h=e.time_to_train_h,
        tokens_per_s=e.tokens_per_s,
        mfu=e.mfu,
        comm_fraction=e.comm_fraction,
        checkpoint_gb=e.checkpoint_bytes / GB,
        checkpoint_weights_gb=e.checkpoint_weights_bytes / GB,
        checkpoint_stall_fraction=e.checkpoint_stall_fraction,
        bottleneck=e.bottleneck,
        arithmetic_intensity=e.arithmetic_intensity,
        ridge_point=e.ridge_point,
        meets_deadline=e.meets_deadline,
        measured=e.measured,
        reasons=list(e.reasons),
        notes=list(e.notes),
    )


# ---------------------------------------------------------------- text


def _num(x: float | None, digits: int = 1) -> str:
    if x is None:
        return "-"
    if not math.isfinite(x):
        return "inf"
    return f"{x:,.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(
        h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(header)
    )
    out = ["    " + line]
    for r in rows:
        out.append(
            "    "
            + "  ".join(
                c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)
            )
        )
    return out


def render_text(report: EstimateReport) -> str:
    lines: list[str] = [
        f"gpusolve estimate — GB = 10^9 bytes; headroom {report.headroom:.0%}; "
        + (
            "the configuration given"
            if report.mode == "explicit"
            else "smallest feasible configuration per card"
        ),
        "",
    ]
    for w in report.workloads:
        lines += _workload_text(w)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _workload_text(w: WorkloadEstimate) -> list[str]:
    a, t = w.arch, w.thumb
    source = (
        f"preset {a.preset}"
        if a.preset
        else ("COARSE shape from params_b" if a.coarse else "architecture as given")
    )
    size = f"{a.params_b:.3g} B params"
    if a.experts > 1:
        size += f" ({a.active_params_b:.3g} B active, {a.experts} experts, top-{a.active_experts})"
    head = f"== {w.name}: {w.kind}, {w.precision}"
    if w.kind != "inference":
        head += f", {w.optimizer}"
        if w.tokens:
            head += f", {w.tokens:.3g} tokens"
    if w.deadline_h:
        head += f", deadline {w.deadline_h:g} h"
    lines = [
        head,
        f"  model: {size}; {source}",
        f"  shape: {a.layers} layers, hidden {a.hidden}, {a.heads} heads ({a.kv_heads} KV), "
        f"ffn {a.ffn}, vocab {a.vocab}" + (" [coarse]" if a.coarse else ""),
    ]
    lines += [f"    assumed: {x}" for x in a.assumptions]
    if a.coarse:
        lines.append(f"    {a.derivation}")
    lines.append(
        f"  formula, whole job on one GPU: {t.formula_whole_model_gb:,.1f} GB "
        f"(model states {t.formula_model_states_gb:,.1f} GB)"
    )
    params_b = a.params_b
    lo, hi = t.h30_range
    lines.append(
        f"  rule of thumb H30 ({t.h30_class} × {t.h30_factor:g}; documents say {lo:g}–{hi:g}): "
        f"{params_b:.3g} × {t.h30_factor:g} = {t.h30_gb:,.0f} GB"
    )
    if t.h05_low_gb is not None and t.h05_high_gb is not None:
        lines.append(
            f"  rule of thumb H05 (16–24 B/param): ≥ {t.h05_low_gb:,.0f} GB "
            f"(up to {t.h05_high_gb:,.0f} GB)"
        )
    lines.append(f"  fits on: {', '.join(w.fits_on) if w.fits_on else 'no card'}")
    if w.configs:
        lines.append("  memory per GPU, GB:")
        rows = []
        for c in w.configs:
            m = c.memory_per_gpu_gb
            rows.append(
                [
                    c.card,
                    str(c.gpus),
                    _layout_text(c, w.kind == "inference"),
                    _num(m.weights),
                    _num(m.gradients),
                    _num(m.optimizer),
                    _num(m.activations),
                    _num(m.kv_cache),
                    _num(m.overhead),
                    _num(m.total),
                    _num(c.memory_capacity_gb),
                    "yes" if c.fits else "NO",
                ]
            )
        lines += _table(
            [
                "card",
                "GPUs",
                "layout",
                "weights",
                "grads",
                "optim",
                "activ",
                "kv",
                "ovh",
                "total",
                "cap",
                "fits",
            ],
            rows,
        )
        lines.append("  performance:")
        rows = []
        for c in w.configs:
            rows.append(
                [
                    c.card,
                    str(c.gpus),
                    f"{c.flops:.3g}",
                    _num(c.time_to_train_h),
                    f"{c.tokens_per_s:,.0f}",
                    _num(c.mfu, 2) if c.mfu is not None else "-",
                    f"{c.comm_fraction:.1%}",
                    _num(c.checkpoint_gb),
                    f"{c.checkpoint_stall_fraction:.1%}",
                    c.bottleneck,
                    "ok" if c.feasible else "NO",
                ]
            )
        flops_label = "FLOP/token" if w.kind == "inference" else "FLOPs"
        lines += _table(
            [
                "card",
                "GPUs",
                flops_label,
                "time_h",
                "tok/s",
                "MFU",
                "comm",
                "ckpt_GB",
                "stall",
                "bottleneck",
                "feasible",
            ],
            rows,
        )
        for c in w.configs:
            for r in c.reasons:
                lines.append(f"    {c.card}: NO — {r}")
        seen: set[str] = set(a.assumptions) | {a.derivation}
        for c in w.configs:
            for n in c.notes:
                if n not in seen:
                    seen.add(n)
                    lines.append(f"    note ({c.card}): {n}")
    for r in w.rejections:
        lines.append(f"  rejected {r}")
    return lines


def _layout_text(c: ConfigOut, inference: bool) -> str:
    if inference:
        pp = f" PP{c.pp}" if c.pp > 1 else ""
        return f"{c.replicas}× TP{c.tp}{pp}, {c.micro_batch} seq"
    ckpt = {"none": "", "selective": " sel-rc", "full": " full-rc"}[c.gradient_checkpointing]
    zero = {0: "ddp", 1: "z1", 2: "z2", 3: "z3"}[c.zero_stage]
    if c.sharding.startswith("fsdp"):
        zero = "fsdp" + ("-hybrid" if c.sharding == "fsdp_hybrid" else "")
    return f"TP{c.tp} PP{c.pp} DP{c.dp} {zero}{ckpt} mb{c.micro_batch}×{c.grad_accum}"
