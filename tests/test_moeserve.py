"""MoE serving: the routed experts at each expert's share of the tokens, expert parallelism and
attention data-parallel with their dispatch (moeserve.py). Expected values are derived by hand
from the shapes (Mixtral 8x7B: hidden 4096, 32 layers, 8 experts of 14336, top-2)."""

from __future__ import annotations

import math

import pytest
from tests.support.validation_cases import _hgx

from gpusolve.estimate import Layout, resolve_arch
from gpusolve.estimate.memory import weights_bytes
from gpusolve.estimate.moeserve import (
    check_split,
    dispatch_s,
    expanded_row_bytes,
    rows_per_expert,
    split_of,
    touched_share,
)
from gpusolve.estimate.serving import (
    split_weights_bytes,
)
from gpusolve.estimate.servingrates import (
    Rates,
)
from gpusolve.models.requirements import InferenceWorkload, ModelShape, make_workload


def _mixtral(precision: str = "bf16", engine: str = "vllm") -> InferenceWorkload:
    w = make_workload(
        name="moe",
        kind="inference",
        model=ModelShape(preset="mixtral-8x7b"),
        precision=precision,
        prompt_tokens=512,
        output_tokens=256,
        concurrency=8,
        engine=engine,
    )
    assert isinstance(w, InferenceWorkload)
    return w


def test_touched_experts_and_their_rows() -> None:
    arch = resolve_arch(ModelShape(preset="mixtral-8x7b"))
    # one token picks 2 of 8: a quarter of the experts, 1 row each
    assert touched_share(arch, 1) == pytest.approx(0.25)
    assert rows_per_expert(arch, 1) == pytest.approx(1.0)
    # two tokens: 1 - (6/8)^2 = 0.4375 touched; 4 (token, expert) rows over 3.5 experts
    assert touched_share(arch, 2) == pytest.approx(0.4375)
    assert rows_per_expert(arch, 2) == pytest.approx(4 / 3.5)
    # 1,024 tokens touch every expert, 256 rows each
    assert rows_per_expert(arch, 1024) == pytest.approx(256.0)


def test_expanded_rows_per_engine() -> None:
    # a separate sum kernel: 16-bit rows written and read back
    assert expanded_row_bytes(False, "bf16") == 4.0
    # a fused finalize: the permuted activations at the GEMM's input width, written and read
    assert expanded_row_bytes(True, "fp8") == 2.0
    assert expanded_row_bytes(True, "bf16") == 4.0


def test_expert_parallel_layouts_checked() -> None:
    moe = resolve_arch(ModelShape(preset="mixtral-8x7b"))
    dense = resolve_arch(ModelShape(preset="llama-3.1-8b"))
    assert check_split(moe, Layout(1, 8, 1, 1, ep=8)) is None
    assert check_split(moe, Layout(1, 2, 1, 1, ep=2, attention_dp=True)) is None
    assert "MoE" in (check_split(dense, Layout(1, 2, 1, 1, ep=2)) or "")
    assert "EP4 must equal" in (check_split(moe, Layout(1, 8, 1, 1, ep=4)) or "")
    assert "do not spread" in (check_split(moe, Layout(1, 16, 1, 1, ep=16)) or "")
    assert "needs expert parallelism" in (
        check_split(moe, Layout(1, 2, 1, 1, attention_dp=True)) or ""
    )


def test_weights_per_gpu_by_split() -> None:
    w = _mixtral()
    arch = resolve_arch(w.model)
    total = weights_bytes(arch, "bf16")
    experts = total * arch.expert_params / arch.params
    dense = total - experts
    # TP4 and EP4 hold the same bytes a rank: a quarter of everything
    assert split_weights_bytes(w, arch, Layout(1, 4, 1, 1)) == pytest.approx(total / 4)
    assert split_weights_bytes(w, arch, Layout(1, 4, 1, 1, ep=4)) == pytest.approx(total / 4)
    # attention DP: the attention and embeddings whole on every rank, a quarter of the experts
    dp = Layout(1, 4, 1, 1, ep=4, attention_dp=True)
    assert split_weights_bytes(w, arch, dp) == pytest.approx(dense + experts / 4)


def test_attention_dp_trades_all_reduces_for_a_dispatch() -> None:
    w = _mixtral()
    arch = resolve_arch(w.model)
    hw = _hgx("h100-sxm", 900, 400)
    tp = Rates(w, arch, hw, Layout(1, 4, 1, 1, ep=4))
    dp = Rates(w, arch, hw, Layout(1, 4, 1, 1, ep=4, attention_dp=True))
    rows = 256.0
    assert tp.tp_comm_s(rows) > 0
    assert dp.tp_comm_s(rows) == pytest.approx(
        dispatch_s(
            arch, hw, split_of(Layout(1, 4, 1, 1, ep=4, attention_dp=True)), rows, 32, "bf16"
        )
    )
    # a rank attends a quarter of the sequences with all 8 KV heads: per sequence and token
    # it holds 2 (K, V) x 8 heads x 128 x 2 bytes x 32 layers, a quarter of that on average
    kv_full = 2 * 8 * 128 * 2 * 32
    assert dp.kv_token_gpu == pytest.approx(kv_full / 4)
    # TP4 splits the 8 KV heads two a rank: the same bytes a rank
    assert tp.kv_token_gpu == pytest.approx(kv_full / 4)


def test_dispatch_across_two_nodes_by_hand() -> None:
    """EP16 over two 8-GPU nodes, top-2 of 8 experts... Mixtral has 8 experts, so a 16-rank
    group cannot hold it; the all-to-all volume is checked on the formula's own terms with a
    shape of 16 experts instead."""
    arch = resolve_arch(
        ModelShape(
            layers=4,
            hidden=4096,
            heads=32,
            kv_heads=8,
            ffn=14336,
            vocab=32000,
            experts=16,
            active_experts=2,
            expert_ffn=2048,
        )
    )
    hw = _hgx("h100-sxm", 900, 400)
    split = split_of(Layout(1, 16, 1, 1, ep=16, attention_dp=True))
    rows = 1600.0
    tokens = rows / 16
    # of a token's 2 copies, 2 x 8/16 = 1 leaves the node, 1 stays (7/8 of it to another GPU)
    nic = hw.nic_bytes_per_s()
    intra = hw.intra_bus_bytes_per_s(8, 2)
    # Every peer's message goes at once: one message's start-up, NCCL's Simple-protocol base
    # (8.4 µs) plus one NVLink hop (3.4 µs) and one network hop (14.0 µs), not 15 ring steps.
    latency = (8.4 + 3.4 + 14.0) * 1e-6

    def one(width: float) -> float:
        off = tokens * 1.0 * width / nic
        on = tokens * 1.0 * width * 7 / 8 / intra
        return max(off, on) + latency

    expected = 4 * (one(4096 * 2.0) + one(4096 * 2.0))
    assert dispatch_s(arch, hw, split, rows, 4, "bf16") == pytest.approx(expected)
    # 8-bit experts dispatch 8-bit tokens and combine 16-bit results
    expected_fp8 = 4 * (one(4096 * 1.0) + one(4096 * 2.0))
    assert dispatch_s(arch, hw, split, rows, 4, "fp8") == pytest.approx(expected_fp8)


def test_expert_stream_follows_the_touched_experts() -> None:
    w = _mixtral()
    arch = resolve_arch(w.model)
    hw = _hgx("h100-sxm", 900, 400)
    rates = Rates(w, arch, hw, Layout(1, 2, 1, 1))
    total = weights_bytes(arch, "bf16") / 2
    experts = total * arch.expert_params / arch.params
    stream_1, _ = rates.gemm_parts(1.0)
    stream_many, _ = rates.gemm_parts(4096.0)
    # one token streams the dense weights and a quarter of the experts; many stream them all
    assert stream_1 == pytest.approx((total - experts + experts / 4) / rates.weight_bandwidth)
    assert stream_many == pytest.approx(total / rates.weight_bandwidth, rel=1e-9)
    assert math.isfinite(rates.tpot_decode_s(64))
