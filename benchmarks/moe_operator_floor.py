"""The fastest step NVIDIA's own measured kernels allow for each Qwen3-235B-A22B H200 row of
TensorRT-LLM's perf-overview, read as the validation case reads it (TP8 attention, EP8
experts, the batch the no-evict scheduler admits), against the step the published throughput
implies.

    pip install pyarrow pandas   # not gpusolve dependencies: this script is run by hand
    python benchmarks/moe_operator_floor.py AIC_CHECKOUT

AIConfigurator (github.com/ai-dynamo/aiconfigurator @095f58a5, Apache-2.0) publishes per-
operator latencies measured with TensorRT-LLM 1.2.0rc5 on an H200 SXM system
(`aic-core/src/aiconfigurator_core/systems/data/h200_sxm/`): the whole MoE op
(`moe/trtllm/1.2.0rc5/moe_perf.parquet`: hidden 4096, 128 experts of 1536, top-8, FP8,
EP8, balanced routing), TensorRT-LLM's own all-reduce on 8 GPUs
(`comm/trtllm/1.2.0rc5/custom_allreduce_perf.parquet`, BF16 elements) and its decode
attention (`attention/trtllm/1.2.0rc5/generation_attention_perf.parquet`, 8 query heads and
one KV head of 128 per GPU, FP8 KV). The perf-overview was measured with an earlier release
(1.0); a later release's kernels are no slower, so their sum is a floor for the older one.

Per row, a floor on one decode step at batch B (only the B decode tokens: the prompts' own
tokens would only add): 94 layers x (two all-reduces of B x 4096 + the MoE op at B tokens +
the KV reads at the fastest KV rate the attention table shows at batch >= 256), nothing else
(no QKV/O GEMMs, norms, router or LM head). Throughput at most B / floor; a larger batch than
the memory admits cannot run, and B / floor grows with B, so that bound holds for any batch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "solver"))

from tests.support.validation_serving import (  # noqa: E402
    MOE_TABLES,
    bench_batch,
    dgx,
    moe_workload,
)

from gpusolve.estimate import Layout, evaluate  # noqa: E402
from gpusolve.models.params import Params  # noqa: E402

DATA = "aic-core/src/aiconfigurator_core/systems/data/h200_sxm"
RELEASE = "1.2.0rc5"
LAYERS, HIDDEN, HEAD_DIM = 94, 4096, 128


def _interp(x: float, xs: np.ndarray, ys: np.ndarray) -> float:
    """Log-log interpolation inside the grid (the tables' rows are powers and near-powers)."""
    return float(np.exp(np.interp(np.log(x), np.log(xs), np.log(ys))))


def tables(checkout: Path) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    base = checkout / DATA
    moe = pd.read_parquet(base / f"moe/trtllm/{RELEASE}/moe_perf.parquet")
    moe = moe[
        (moe.hidden_size == HIDDEN)
        & (moe.inter_size == 1536)
        & (moe.topk == 8)
        & (moe.num_experts == 128)
        & (moe.moe_dtype == "fp8")
        & (moe.distribution == "balanced")
        & (moe.moe_tp_size == 1)
        & (moe.moe_ep_size == 8)
    ].sort_values("num_tokens")
    ar = pd.read_parquet(base / f"comm/trtllm/{RELEASE}/custom_allreduce_perf.parquet")
    ar = ar[(ar.num_gpus == 8) & (ar.allreduce_dtype == "bfloat16")].sort_values("message_size")
    att = pd.read_parquet(base / f"attention/trtllm/{RELEASE}/generation_attention_perf.parquet")
    att = att[
        (att.num_heads == 8)
        & (att.num_key_value_heads == 1)
        & (att.head_dim == HEAD_DIM)
        & (att.kv_cache_dtype == "fp8")
        & (att.window_size == 0)
        & (att.beam_width == 1)
        & (att.batch_size >= 256)
    ]
    # KV bytes a call reads: batch x context (the step) x K and V of one head, 8-bit.
    kv_bytes = att.batch_size * att.step * 2 * HEAD_DIM
    fastest_kv_bytes_per_s = float((kv_bytes / (att.latency / 1e3)).max())
    return moe, ar, fastest_kv_bytes_per_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path, help="an AIConfigurator checkout (or the data tree)")
    args = ap.parse_args(argv)
    moe, ar, kv_rate = tables(args.checkout)
    print(f"fastest KV read in the attention table (batch >= 256): {kv_rate / 1e12:.2f} TB/s")
    print(
        "| ISL/OSL | batch | all-reduce ms | MoE ms | KV ms | floor ms | published step ms | "
        "published / bound | model |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    hw = dgx("h200-sxm")
    for (isl, osl), published in MOE_TABLES["h200-sxm"].items():
        w = moe_workload(isl, osl)
        batch = bench_batch(w, hw, 8, isl, osl, ep=8)
        ms = 1e-3
        allreduce = 2 * _interp(batch * HIDDEN, ar.message_size.values, ar.latency.values) * ms
        expert = _interp(batch, moe.num_tokens.values, moe.latency.values) * ms
        kv = batch * (isl + osl / 2) * 2 * HEAD_DIM / kv_rate
        floor = LAYERS * (allreduce + expert + kv)
        bound = batch / floor
        model = evaluate(
            w, hw, Layout(1, 8, 1, 1, micro_batch=batch, ep=8), Params(headroom=0.0)
        ).tokens_per_s
        print(
            f"| {isl}/{osl} | {batch:,} | {LAYERS * allreduce * 1e3:.1f} | "
            f"{LAYERS * expert * 1e3:.1f} | {LAYERS * kv * 1e3:.1f} | {floor * 1e3:.1f} | "
            f"{batch / published * 1e3:.1f} | {published / bound:.2f} | "
            f"{model / published - 1:+.1%} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
