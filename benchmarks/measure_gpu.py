"""Measured against estimated, on one real GPU: peak memory, tokens/s and MFU (issue 25).

    pip install -e '.[measure]'
    python benchmarks/measure_gpu.py --card h200-sxm            # a few minutes on one GPU
    python benchmarks/measure_gpu.py --device cpu --tiny            # the script's own smoke test

For Llama-shaped dense models from about 0.5B up to the largest that fits the card (bf16,
AdamW, micro-batch 1, sequence 2048), with and without full recomputation, it runs
`gpusolve measure` (gpusolve.measure.session) for a few steps and prints one Markdown row per
run: the physics' estimate for the same single-GPU layout (gpusolve.estimate.evaluate on the
card alone) next to what the run measured. A shape that does not fit prints OOM. The table
goes into benchmarks/README.md ("Measured against estimated").
"""

from __future__ import annotations

import argparse
import sys
import time

from gpusolve.estimate import Hardware, Layout, evaluate
from gpusolve.load.catalog import load_catalog
from gpusolve.measure.session import Options, measure
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, make_workload

# (label, layers, hidden, heads, kv_heads, ffn): Llama-style widths (vocab 32,000).
SHAPES = [
    ("0.5B", 16, 1536, 12, 4, 4096),
    ("1.1B", 22, 2048, 32, 4, 5632),  # TinyLlama-1.1B's shape
    ("2.7B", 32, 2560, 32, 8, 6912),
    ("4.4B", 32, 3328, 26, 26, 8960),
    ("6.7B", 32, 4096, 32, 32, 11008),  # Llama-2-7B's shape (18 B/param states: 121 GB)
]
TINY = [("tiny", 2, 128, 4, 2, 344)]
GB = 1e9


def row(label: str, shape: ModelShape, ckpt: str, card_id: str, args: argparse.Namespace) -> str:
    w = make_workload(
        name=label,
        kind="pretrain",
        model=shape,
        tokens=1e9,
        seq_len=args.seq_len,
        micro_batch=1,
        gradient_checkpointing=ckpt,  # type: ignore[arg-type]
    )
    card = load_catalog().catalog.cards[card_id]
    params = Params()
    est = evaluate(w, Hardware.generic(card, 1), Layout(1, 1, 1, 1, "ddp", ckpt, 1, 1), params)
    head = f"| {label} | {ckpt} | {est.memory.total_bytes / GB:.1f} |"
    try:
        opts = Options(steps=args.steps, warmup=args.warmup, device=args.device)
        r = measure(w, card, params, opts, "measure_gpu")
    except Exception as exc:  # CUDA out of memory is a RuntimeError subclass
        if "out of memory" not in str(exc).lower():
            raise
        return f"{head} OOM | | {est.tokens_per_s:,.0f} | | {est.mfu:.1%} | |"
    peak = f"{r.peak_reserved_gb:.1f}" if r.peak_reserved_gb is not None else "n/a"
    mfu = f"{r.mfu:.1%}" if r.mfu is not None else "n/a"
    ratio = r.tokens_per_s / est.tokens_per_s if est.tokens_per_s else float("nan")
    return (
        f"{head} {peak} | {est.tokens_per_s:,.0f} | {r.tokens_per_s:,.0f} ({ratio:.2f}x) | "
        f"{est.mfu:.1%} | {mfu} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--card", default="h200-sxm", help="the catalogue id of the GPU")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--tiny", action="store_true", help="one tiny shape (smoke test)")
    args = ap.parse_args()
    if args.tiny:
        args.seq_len = min(args.seq_len, 128)
    print(
        "| model | recompute | est. memory GB | measured peak reserved GB | est. tokens/s "
        "| measured tokens/s | est. MFU | measured MFU |"
    )
    print("|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for label, layers, hidden, heads, kv, ffn in TINY if args.tiny else SHAPES:
        shape = ModelShape(
            layers=layers, hidden=hidden, heads=heads, kv_heads=kv, ffn=ffn, vocab=32000
        )
        for ckpt in ("none", "full"):
            print(row(label, shape, ckpt, args.card, args), flush=True)
    print(f"\n({time.perf_counter() - start:.0f} s, {args.steps} timed steps per row)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
