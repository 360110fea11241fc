"""Plain-text `gpusolve estimate` report: memory, speed and where the time goes."""

from __future__ import annotations

import math

from gpusolve.models.estimate import (
    ConfigOut,
    EstimateReport,
    ServingOut,
    StageOut,
    WorkloadEstimate,
)
from gpusolve.render.fmt import extra_degrees


def estimate_text(report: EstimateReport) -> str:
    mode = (
        "the configuration given"
        if report.mode == "explicit"
        else "smallest feasible configuration per card"
    )
    lines: list[str] = [f"gpusolve estimate — GB = 10^9 bytes; {mode}", ""]
    for w in report.workloads:
        lines += _workload_text(w)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _num(x: float | None, digits: int = 1) -> str:
    if x is None:
        return "-"
    if not math.isfinite(x):
        return "inf"
    return f"{x:,.{digits}f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "    " + "  ".join(
            c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)
        )

    return [line(header), *(line(r) for r in rows)]


def _head(w: WorkloadEstimate) -> list[str]:
    a, t = w.arch, w.thumb
    source = (
        f"preset {a.preset}"
        if a.preset
        else ("COARSE shape from params_b" if a.coarse else "architecture as given")
    )
    size = f"{a.params_b:.3g} B params"
    if a.experts > 1:
        size += f" ({a.active_params_b:.3g} B active, {a.experts} experts, top-{a.active_experts})"
    if a.mtp_depth:
        size += (
            f" + {a.mtp_depth} multi-token prediction module(s) of {a.mtp_params_b:.3g} B "
            "beside the head, trained and timed on its rank"
        )
    head = f"== {w.name}: {w.kind}, {w.precision}"
    if w.kind != "inference":
        head += f", {w.optimizer}"
        if w.tokens:
            head += f", {w.tokens:.3g} tokens"
    if w.deadline_h:
        head += f", deadline {w.deadline_h:g} h"
    head += f"; headroom {w.headroom:.0%}"
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
    lo, hi = t.h30_range
    lines.append(
        f"  rule of thumb H30 ({t.h30_class} × {t.h30_factor:g}; documents say {lo:g}–{hi:g}): "
        f"{a.params_b:.3g} × {t.h30_factor:g} = {t.h30_gb:,.0f} GB"
    )
    if t.h05_low_gb is not None and t.h05_high_gb is not None:
        lines.append(
            f"  rule of thumb H05 (16–24 B/param): ≥ {t.h05_low_gb:,.0f} GB "
            f"(up to {t.h05_high_gb:,.0f} GB)"
        )
    lines.append(f"  fits on: {', '.join(w.fits_on) if w.fits_on else 'no card'}")
    return lines


def _memory_rows(w: WorkloadEstimate) -> list[str]:
    rows = []
    for c in w.configs:
        m = c.memory_per_gpu_gb
        rows.append(
            [
                c.card,
                str(c.gpus),
                _layout_text(c, w.kind == "inference"),
                _num(m.weights),
                _num(m.gathered_weights),
                _num(m.gradients),
                _num(m.optimizer),
                _num(m.activations),
                _num(m.kv_cache),
                _num(m.overhead),
                _num(m.total),
                _num(c.usable_memory_gb),
                _num(c.card_memory_gb),
                "yes" if c.fits else "NO",
            ]
        )
    header = ["card", "GPUs", "layout", "weights", "gathered", "grads", "optim", "activ", "kv"]
    header += ["ovh", "total", "usable", "card", "fits"]
    return ["  memory per GPU, GB:", *_table(header, rows)]


def _training_rows(w: WorkloadEstimate) -> list[str]:
    rows = []
    for c in w.configs:
        s = c.step
        parts = (
            [
                s.compute_s,
                s.recompute_s,
                s.tp_comm_s,
                s.cp_comm_s,
                s.ep_comm_s,
                s.pp_comm_s,
                s.bubble_s,
                s.dp_comm_s,
                s.optimizer_s,
                s.step_s,
            ]
            if s
            else [None] * 10
        )
        rows.append(
            [
                c.card,
                str(c.gpus),
                *(_num(x, 2) for x in parts),
                _pct(c.mfu),
                _pct(c.hfu),
            ]
        )
    header = ["card", "GPUs", "compute", "recomp", "TP", "CP", "EP", "PP", "bubble", "DP"]
    header += ["optim", "step", "MFU", "HFU"]
    out = ["  step time, s (exposed communication by kind; the parts add up to step):"]
    out += _table(header, rows)
    rows = []
    for c in w.configs:
        rows.append(
            [
                c.card,
                str(c.gpus),
                f"{c.flops:.3g}",
                _num(c.time_to_train_h),
                f"{c.tokens_per_s:,.0f}",
                f"{c.comm_fraction:.1%}",
                (c.step.dp_link if c.step else "-"),
                _num(c.checkpoint_gb),
                f"{c.checkpoint_stall_fraction:.1%}",
                c.bottleneck,
                "ok" if c.feasible else "NO",
            ]
        )
    header = ["card", "GPUs", "FLOPs", "time_h", "tok/s", "comm", "DP link", "ckpt_GB"]
    header += ["stall", "bottleneck", "feasible"]
    return [
        *out,
        "  run (time_h includes failures and restarts, see goodput):",
        *_table(header, rows),
        *_goodput_rows(w),
        *_stage_rows(w),
    ]


def _goodput_rows(w: WorkloadEstimate) -> list[str]:
    """Steady state and what a real run adds to it, per configuration."""
    rows = []
    for c in w.configs:
        g = c.goodput
        if g is None:
            continue
        rows.append(
            [
                c.card,
                str(c.gpus),
                _num(g.steady_h),
                f"{g.failures:,.1f}",
                _num(g.lost_work_h),
                _num(g.restart_h),
                _num(g.overhead_h + g.extra_saves_h),
                _num(g.total_h),
                _pct(g.goodput),
                _num(g.steady_h * c.gpus, 0),
                _num(g.total_h * c.gpus, 0),
                f"{g.checkpoint_interval_min:,.0f}/{_num(g.optimal_interval_min, 0)}",
            ]
        )
    if not rows:
        return []
    header = ["card", "GPUs", "steady_h", "failures", "lost_h", "restart_h", "other_h"]
    header += ["total_h", "goodput", "GPU-h steady", "GPU-h total", "ckpt_min/best"]
    source = w.configs[0].goodput.source if w.configs[0].goodput else ""
    title = f"  goodput (failures: {source}; other = evaluation/ramp-up + extra saves):"
    return [title, *_table(header, rows)]


def _stage_rows(w: WorkloadEstimate) -> list[str]:
    """Memory per pipeline rank, runs of identical ranks shown once."""
    out: list[str] = []
    mtp = w.arch.mtp_depth > 0
    for c in w.configs:
        if len(c.stages) < 2:
            continue
        rows: list[list[str]] = []
        groups: list[tuple[int, int]] = []
        for st in c.stages:
            key = _stage_key(st)
            if groups and _stage_key(c.stages[groups[-1][0]]) == key:
                groups[-1] = (groups[-1][0], st.rank)
            else:
                groups.append((st.rank, st.rank))
        for first, last in groups:
            st = c.stages[first]
            m = st.memory_gb
            extra = ("+embed" if st.embedding else "") + ("+head" if st.head else "")
            if st.head and mtp:
                extra += "+MTP"
            ranks = str(first) if first == last else f"{first}-{last}"
            rows.append(
                [
                    ranks,
                    f"{st.layers}{extra}",
                    _num(m.weights + m.gathered_weights),
                    _num(m.gradients),
                    _num(m.optimizer),
                    _num(m.activations),
                    _num(m.total),
                ]
            )
        header = ["ranks", "layers", "weights", "grads", "optim", "activ", "total"]
        out += [f"  memory per pipeline stage, {c.card} {_layout_text(c, False)}, GB:"]
        out += _table(header, rows)
    return out


def _stage_key(st: StageOut) -> tuple[object, ...]:
    m = st.memory_gb
    return (st.layers, st.embedding, st.head, round(m.total, 1), round(m.activations, 1))


def _serving_rows(w: WorkloadEstimate) -> list[str]:
    rows = []
    for c in w.configs:
        v = c.serving
        if v is None:
            continue
        d = v.decode_step_ms
        rows.append(
            [
                c.card,
                str(c.gpus),
                f"{v.batch}/{v.max_batch} ({v.batch_limit})",
                f"{v.mean_context:,.0f}",
                _num(v.tpot_ms),
                _num(v.ttft_ms, 0),
                f"{v.single_stream_tokens_per_s:,.0f}",
                f"{v.prefill_share:.0%}",
                _pools(v),
                _num(d.get("weights"), 2),
                _num(d.get("compute"), 2),
                _num(d.get("kv_cache"), 2),
                _num((d.get("prefill") or 0.0) + (d.get("elementwise") or 0.0), 2),
                _num(d.get("tp_comm"), 2),
                f"{c.tokens_per_s:,.0f}",
                c.bottleneck,
                "ok" if c.feasible else "NO",
            ]
        )
    if not rows:
        return []
    header = ["card", "GPUs", "batch/max", "ctx", "TPOT_ms", "TTFT_ms", "1-stream", "prefill"]
    header += ["pools", "w_ms", "gemm+", "kv_ms", "pf+elt", "TP_ms", "tok/s", "bottleneck"]
    header += ["feasible"]
    engines = sorted({f"{c.serving.engine} ({c.serving.reserve})" for c in w.configs if c.serving})
    return [
        "  serving (per decode replica; step parts in ms: weight stream, GEMM math beyond it, KV "
        "attention, prompt attention + elementwise, TP all-reduces; tok/s over all replicas; "
        f"engine {', '.join(engines)}):",
        *_table(header, rows),
        *_load_rows(w),
    ]


def _load_rows(w: WorkloadEstimate) -> list[str]:
    """TTFT/TPOT percentiles and goodput at the request rate, where one was given."""
    rows = []
    for c in w.configs:
        load = c.serving.load if c.serving else None
        if load is None:
            continue
        rows.append(
            [
                c.card,
                str(c.gpus),
                f"{load.request_rate:g} / {load.replicas}",
                *(_num(x, 0 if x is not None and x >= 100 else 1) for x in load.ttft_ms),
                *(_num(x, 1) for x in load.tpot_ms),
                f"{load.throughput_rps:,.2f}",
                "-" if load.goodput_rps is None else f"{load.goodput_rps:,.2f}",
                f"{load.mean_running:,.1f}",
                "ok" if load.meets_sla else "NO",
            ]
        )
    if not rows:
        return []
    header = ["card", "GPUs", "req/s / replicas", "TTFT_p50", "TTFT_p90", "TTFT_p99"]
    header += ["TPOT_p50", "TPOT_p90", "TPOT_p99", "done/s", "goodput/s", "running", "SLA"]
    return [
        "  at the request rate (simulated continuous batching, ms; TTFT includes queueing; "
        "goodput = requests/s meeting every SLA target):",
        *_table(header, rows),
    ]


def _pools(v: ServingOut) -> str:
    """'agg', or 'P2xTP4+D3xTP2': prefill and decode replicas when disaggregated."""
    p = v.disaggregated
    if p is None:
        return "agg"
    pre = f"P{p.prefill_replicas}xTP{p.prefill_tp}" + (
        f"PP{p.prefill_pp}" if p.prefill_pp > 1 else ""
    )
    dec = f"D{p.decode_replicas}xTP{p.decode_tp}" + (f"PP{p.decode_pp}" if p.decode_pp > 1 else "")
    return f"{pre}+{dec}"


def _workload_text(w: WorkloadEstimate) -> list[str]:
    lines = _head(w)
    if w.configs:
        lines += _memory_rows(w)
        lines += _serving_rows(w) if w.kind == "inference" else _training_rows(w)
        for c in w.configs:
            for r in c.reasons:
                lines.append(f"    {c.card}: NO — {r}")
        seen: set[str] = set(w.arch.assumptions) | {w.arch.derivation}
        for c in w.configs:
            for n in c.notes:
                if n not in seen:
                    seen.add(n)
                    lines.append(f"    note ({c.card}): {n}")
        for c in w.configs:
            for n in c.calibration:
                if n not in seen:
                    seen.add(n)
                    lines.append(f"    measured ({c.card}): {n}")
    for r in w.rejections:
        lines.append(f"  rejected {r}")
    return lines


def _layout_text(c: ConfigOut, inference: bool) -> str:
    if inference:
        pp = f" PP{c.pp}" if c.pp > 1 else ""
        pp += (f" EP{c.ep}" if c.ep > 1 else "") + (" attention-DP" if c.attention_dp else "")
        v = c.serving
        if v is not None and 0 < v.sequences < c.replicas * c.micro_batch:
            fill = " + ".join(f"{n}×{b}" if n > 1 else str(b) for n, b in v.replica_batches)
            return f"{c.replicas}× TP{c.tp}{pp}, {v.sequences} seq ({fill})"
        return f"{c.replicas}× TP{c.tp}{pp}, {c.micro_batch} seq"
    ckpt = {"none": "", "selective": " sel-rc", "full": " full-rc"}[c.gradient_checkpointing]
    zero = {0: "ddp", 1: "z1", 2: "z2", 3: "z3"}[c.zero_stage]
    if c.sharding.startswith("fsdp"):
        zero = "fsdp" + ("-hybrid" if c.sharding == "fsdp_hybrid" else "")
    extra = "".join(f" {x}" for x in extra_degrees(c.vp, c.cp, c.ep))
    sp = " noSP" if c.tp > 1 and not c.sequence_parallel else ""
    return f"TP{c.tp} PP{c.pp} DP{c.dp}{extra} {zero}{ckpt}{sp} mb{c.micro_batch}×{c.grad_accum}"
