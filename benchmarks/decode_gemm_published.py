"""Decode-shaped GEMM shares per card family from NVIDIA AIConfigurator's published GEMM tables.

    pip install pyarrow   # not a gpusolve dependency: this script is run by hand
    python benchmarks/decode_gemm_published.py AIC_CHECKOUT [--check-h200]

AIConfigurator (github.com/ai-dynamo/aiconfigurator, Apache-2.0) ships per-system operator
measurements: `aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/vllm/<release>/
gemm_perf.parquet`, one row per (dtype, m, n, k) with the latency in ms of vLLM's
`RowParallelLinear` (torch `F.linear`, so cuBLAS, for BF16; vLLM's FP8 linear for fp8), each
a CUDA graph cycling 6 copies of the weight (`collector/vllm/collect_gemm.py`,
`outside_loop_count = 6`; `collector/helper.py` `benchmark_with_power`).

For each model and TP degree this prints a line of `estimate/decode_published.py`'s tables:
the layer's four GEMMs (qkv, o, gate_up, down of Llama-3-8B and -70B, as
`benchmarks/data/h200-decode-gemm.md` measured on the H200), their FLOPs summed over their
times summed, as a share of the card's dense datasheet peak, at M = 1 ... 2048. A shape the
grid does not hold is interpolated: the time per weight element is log-bilinear between the
grid's neighbouring n and k (a decode GEMM's time scales with n·k in both regimes).

Six copies of a small weight can sit in the L2 cache, which a decode step's weights never do
(the step streams every layer's weights once). A (model, TP) set is kept only where each of
its GEMMs' six copies exceed twice the card's L2, so every kept figure streams from memory.

`--check-h200` runs the same procedure on the H200 table and prints it beside the H200 shares
gpusolve measured itself (rotating copies over 4x the L2; HOPPER_SXM): the check that the
published tables and gpusolve's own method read the same kernel rate.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

DATA = "aic-core/src/aiconfigurator_core/systems/data"
MS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)


@dataclass(frozen=True)
class Model:
    name: str
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int = 128

    def gemms(self, tp: int) -> tuple[tuple[int, int], ...]:
        """(n, k) of qkv, o, gate_up, down on one of `tp` GPUs (vLLM's column/row split)."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        return (
            ((q + 2 * kv) // tp, self.hidden),
            (self.hidden, q // tp),
            (2 * self.ffn // tp, self.hidden),
            (self.hidden, self.ffn // tp),
        )


MODELS = (Model("llama3-8b", 4096, 14336, 32, 8), Model("llama3-70b", 8192, 28672, 64, 8))


@dataclass(frozen=True)
class Card:
    system: str  # AIConfigurator's system folder
    release: str  # the vLLM release folder read
    peak_tflops: dict[str, float]  # dense datasheet peak per dtype
    l2_mb: float


# Dense datasheet peaks: A100 (NVIDIA A100 datasheet, BF16 312 TFLOPS dense), L40S (NVIDIA L40S
# datasheet: BF16 362.05, FP8 733 TFLOPS dense), H200 (H200 datasheet: BF16 989, FP8 1,979
# dense), B200 (catalogue: BF16 2,250 dense; vLLM 0.19.0 is the oldest release the table has).
# L2: A100 40 MB (A100 whitepaper), L40S 96 MB (Ada whitepaper), H200 50 MB (Hopper), B200
# 126 MB (secondary sources give 96-126 MB; the larger keeps fewer sets).
CARDS = {
    "a100": Card("a100_sxm", "0.14.0", {"bfloat16": 312.0}, 40.0),
    "l40s": Card("l40s", "0.14.0", {"bfloat16": 362.05, "fp8": 733.0}, 96.0),
    "h200": Card("h200_sxm", "0.14.0", {"bfloat16": 989.0, "fp8": 1979.0}, 50.0),
    "b200": Card("b200_sxm", "0.19.0", {"bfloat16": 2250.0}, 126.0),
}


def read_table(root: Path, card: Card) -> dict[tuple[str, int, int, int], float]:
    import pyarrow.parquet as pq  # optional: this script only

    path = root / DATA / card.system / "gemm" / "vllm" / card.release / "gemm_perf.parquet"
    cols = pq.read_table(path).to_pydict()
    rows = zip(cols["gemm_dtype"], cols["m"], cols["n"], cols["k"], cols["latency"], strict=True)
    return {(d, int(m), int(n), int(k)): float(lat) / 1e3 for d, m, n, k, lat in rows}


def bracket(values: list[int], x: int) -> tuple[int, int]:
    below = max((v for v in values if v <= x), default=values[0])
    above = min((v for v in values if v >= x), default=values[-1])
    return below, above


Table = dict[tuple[str, int, int, int], float]


def gemm_s(table: Table, dtype: str, m: int, n: int, k: int) -> float:
    """Seconds of one (m, n, k) GEMM: log-bilinear in (n, k) on time per weight element."""
    ns = sorted({key[2] for key in table if key[0] == dtype and key[1] == m})
    ks = sorted({key[3] for key in table if key[0] == dtype and key[1] == m})
    n0, n1 = bracket(ns, n)
    k0, k1 = bracket(ks, k)

    def per_elem(nn: int, kk: int) -> float:
        return math.log(table[(dtype, m, nn, kk)] / (nn * kk))

    def weight(lo: int, hi: int, x: int) -> float:
        return 0.0 if hi == lo else (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))

    wn, wk = weight(n0, n1, n), weight(k0, k1, k)
    low = per_elem(n0, k0) * (1 - wn) + per_elem(n1, k0) * wn
    high = per_elem(n0, k1) * (1 - wn) + per_elem(n1, k1) * wn
    return math.exp(low * (1 - wk) + high * wk) * n * k


def streams(model: Model, tp: int, card: Card, dtype: str) -> bool:
    """Every GEMM's six weight copies exceed twice the L2."""
    elem_bytes = 1 if dtype == "fp8" else 2
    return all(6 * n * k * elem_bytes > 2 * card.l2_mb * 1e6 for n, k in model.gemms(tp))


def layer_shares(
    table: dict[tuple[str, int, int, int], float], card: Card, model: Model, tp: int, dtype: str
) -> list[tuple[int, float]]:
    peak = card.peak_tflops[dtype] * 1e12
    out = []
    for m in MS:
        flops = sum(2.0 * m * n * k for n, k in model.gemms(tp))
        secs = sum(gemm_s(table, dtype, m, n, k) for n, k in model.gemms(tp))
        out.append((m, round(flops / secs / peak, 4)))
    return out


def layer_params(model: Model, tp: int) -> float:
    return float(sum(n * k for n, k in model.gemms(tp)))


def sets(root: Path, key: str) -> Iterable[tuple[str, Model, int, str, list[tuple[int, float]]]]:
    card = CARDS[key]
    table = read_table(root, card)
    for dtype in card.peak_tflops:
        for model in MODELS:
            for tp in (1, 2, 4, 8):
                if streams(model, tp, card, dtype):
                    yield dtype, model, tp, key, layer_shares(table, card, model, tp, dtype)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("aic", type=Path, help="an AIConfigurator checkout")
    ap.add_argument("--cards", default="a100,l40s")
    ap.add_argument("--check-h200", action="store_true")
    args = ap.parse_args(argv)
    if args.check_h200:
        return check_h200(args.aic)
    for key in args.cards.split(","):
        for dtype, model, tp, _, shares in sets(args.aic, key):
            fmt = "fp8" if dtype == "fp8" else "bf16"
            card = CARDS[key]
            params = layer_params(model, tp) / 1e6
            figures = " ".join(f"{share:g}" for _, share in shares)
            # one line of a table in estimate/decode_published.py
            print(f"{fmt} {params:.1f}e6 {figures}  # {model.name} TP{tp} ({card.system})")
    return 0


def check_h200(root: Path) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "solver"))
    from gpusolve.estimate.decode_gemm import HOPPER_SXM

    for dtype, model, tp, _, shares in sets(root, "h200"):
        fmt = "fp8" if dtype == "fp8" else "bf16"
        mine = min(
            (t for t in HOPPER_SXM if t.fmt == fmt),
            key=lambda t: abs(math.log(t.layer_params / layer_params(model, tp))),
        )
        ratio = " ".join(
            f"{m}:{s / f:.2f}" for (m, s), (_, f) in zip(shares, mine.points, strict=True)
        )
        print(f"{fmt} {model.name} TP{tp}  published/measured  {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
