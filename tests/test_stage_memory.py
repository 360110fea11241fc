"""Stage-exact training memory: the published frontier layouts fit their 80 GB cards.

Expected figures are derived here by hand from the papers' architectures (config.json /
the reports' tables), not read back from the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpusolve.estimate.pipeline import SplitError, in_flight, rank_layers, split_stages
from gpusolve.models.params import Params

GB = 1e9
OVERHEAD_GB = Params().runtime_overhead_gb + Params().nccl_overhead_gb

# Llama 3 405B (config.json): hidden 16384, 126 layers, 128 heads, 8 KV heads of 128,
# SwiGLU ffn 53248, vocab 128256, untied embeddings.
H, HEADS, KV, HD, FFN, VOCAB = 16384, 128, 8, 128, 53248, 128256
LLAMA_LAYER = H * HD * (2 * HEADS + 2 * KV) + 3 * H * FFN + 2 * H  # params per layer

# Llama 3 §3.3.2 / Table 4: TP8 PP16 DP128 on 16,384 H100, seq 8192, 16 micro-batches of one
# sequence per DP rank, interleaved, one layer fewer on the first and the last stage, no
# activation recomputation, FSDP-style sharding of optimizer states and gradients (ZeRO-2).
LLAMA3 = """\
headroom: 0.05
workloads:
  - name: llama3-405b
    kind: pretrain
    model: {preset: llama-3.1-405b}
    precision: bf16
    seq_len: 8192
    micro_batch: 1
    global_batch: 2048
    tokens: 1.5e13
    sharding: zero2
    gradient_checkpointing: none
    pipeline: {first_stage_layers: 7, last_stage_layers: 7}
"""

# DeepSeek-V3 §3.2-3.3: 2,048 H800, PP16 (DualPipe), EP64, ZeRO-1 DP, no TP, seq 4096, FP8
# training with FP8-cached activations, recomputed RMSNorm and MLA up-projections, SwiGLU
# inputs cached and its output recomputed, BF16 AdamW moments; the preset's MTP module
# (depth 1, §4.2) beside the output head. The report says it fits the 80 GB card, not by how
# much: no headroom is asked for.
DEEPSEEK = """\
headroom: 0.0
workloads:
  - name: deepseek-v3
    kind: pretrain
    model: {preset: deepseek-v3}
    precision: fp8
    seq_len: 4096
    micro_batch: 1
    global_batch: 15360
    tokens: 1.48e13
    sharding: zero1
    gradient_checkpointing: none
    pipeline: {schedule: dualpipe}
    memory_savings: [recompute_norms, recompute_up_projections,
                     recompute_activation_function, fp8_activations, bf16_moments]
"""


def _estimate(run: Callable[..., Any], tmp_path: Path, text: str, *args: str) -> dict[str, Any]:
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text(text)
    res = run("estimate", str(reqs), *args, "--format", "json")
    assert res.code == 0, res.err
    config: dict[str, Any] = json.loads(res.out)["workloads"][0]["configs"][0]
    return config


def test_llama3_405b_fits_its_h100s_and_shows_every_stage(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    c = _estimate(
        gpusolve,
        tmp_path,
        LLAMA3,
        *("--card", "h100-sxm", "--gpus", "16384", "--tp", "8", "--pp", "16", "--vp", "8"),
        *("--zero", "2", "--recompute", "none"),
    )
    assert c["feasible"], c["reasons"]
    stages = c["stages"]
    assert [s["layers"] for s in stages] == [7] + [8] * 14 + [7]
    assert stages[0]["embedding"] and stages[-1]["head"]
    # A middle rank: 8 layers / TP8; bf16 weights, fp32 gradients and 12 B of optimizer
    # state sharded over DP 128.
    params = 8 * LLAMA_LAYER / 8
    # Stored per token per layer (bytes): norm inputs and outputs 4 x 2h, O 2h, Q/K/V
    # 2·128·(128 + 16), SwiGLU gate+up 4·ffn and its output 2·ffn; TP8 with SP splits all.
    per_token = (8 * H + 2 * H + 2 * HD * (HEADS + 2 * KV) + 6 * FFN) / 8
    layer_mb = per_token * 8192
    # 16 micro-batches = PP: the interleaved schedule's warm-up holds all 16 on all 8 chunks.
    middle = stages[1]["memory_gb"]
    assert middle["weights"] == pytest.approx(params * 2 / GB, rel=1e-3)
    assert middle["gradients"] == pytest.approx(params * 4 / 128 / GB, rel=1e-3)
    assert middle["optimizer"] == pytest.approx(params * 12 / 128 / GB, rel=1e-3)
    assert middle["activations"] == pytest.approx(128 * layer_mb / GB, rel=1e-3)
    # The first rank: its first chunk holds only the embedding (§3.3.2): 7 x 16 layer-mbs.
    first = stages[0]["memory_gb"]
    assert first["weights"] == pytest.approx((7 * LLAMA_LAYER + VOCAB * H) / 8 * 2 / GB, rel=1e-3)
    assert first["activations"] == pytest.approx(112 * layer_mb / GB, rel=1e-3)
    # The last rank adds one micro-batch of logits for the loss: 4·s·(h + v)/t bytes.
    last = stages[-1]["memory_gb"]
    logits = 4 * 8192 * (H + VOCAB) / 8
    assert last["activations"] == pytest.approx((112 * layer_mb + logits) / GB, rel=1e-3)
    # The fit is judged on the fullest rank (a middle one), whose figure the layout reports.
    fullest = params * (2 + 4 / 128 + 12 / 128) + 128 * layer_mb + OVERHEAD_GB * GB
    assert c["memory_per_gpu_gb"]["total"] == pytest.approx(fullest / GB, rel=1e-3)
    assert c["memory_per_gpu_gb"]["total"] <= c["usable_memory_gb"] < 80 * 2**30 / GB


def test_llama3_405b_even_split_and_replicated_gradients_do_not_fit(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    # Without the report's options (gradients sharded, trimmed end stages) the same layout
    # needs more than the card: the options are what make it fit.
    text = LLAMA3.replace("sharding: zero2", "sharding: zero1")
    c = _estimate(
        gpusolve,
        tmp_path,
        text,
        *("--card", "h100-sxm", "--gpus", "16384", "--tp", "8", "--pp", "16", "--vp", "8"),
        *("--zero", "1", "--recompute", "none"),
    )
    assert not c["fits"]


def test_deepseek_v3_fits_its_h800s_with_the_reports_savings(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    args = ("--card", "h800-sxm", "--gpus", "2048", "--tp", "1", "--pp", "16", "--ep", "64")
    args += ("--zero", "1", "--recompute", "none")
    c = _estimate(gpusolve, tmp_path, DEEPSEEK, *args)
    assert c["feasible"], c["reasons"]
    # DualPipe: rank r holds stages r and 15 - r; 61 layers over 16 stages (4 x 13 + 3 x 3),
    # so ranks hold 7 or 8 layers, and ranks 0 and 15 hold both the embedding and the head.
    stages = c["stages"]
    assert [s["layers"] for s in stages] == [7, 7, 7] + [8] * 10 + [7, 7, 7]
    assert stages[0]["embedding"] and stages[0]["head"] and stages[15]["head"]
    # An all-MoE rank of 8 layers, by hand from config_671B.json: MLA (q_lora 1536, kv_lora
    # 512, rope 64, nope 128, v 128, 128 heads), 1 shared + 256 routed experts of 2048, EP64.
    h, heads = 7168, 128
    attn = h * 1536 + 1536 * heads * 192 + h * 576 + 512 * heads * 256 + heads * 128 * h
    dense = attn + 2 * h + 3 * h * 2048 + h * 256  # + shared expert, router
    expert = 256 * 3 * h * 2048 / 64
    mid = stages[5]["memory_gb"]
    assert mid["weights"] == pytest.approx(8 * (dense + expert) * 2 / GB, rel=0.01)
    # fp32 gradients (§3.3.3); master 4 B + BF16 moments 4 B over DP 128 (experts over 2).
    assert mid["gradients"] == pytest.approx(8 * (dense + expert) * 4 / GB, rel=0.01)
    assert mid["optimizer"] == pytest.approx(8 * (dense / 128 + expert / 2) * 8 / GB, rel=0.01)
    # Stored per token per MoE layer with the savings: norm inputs 2 x 2h, latents
    # 2·(1536 + 512 + 64), router probabilities 4·256, attention output in FP8 (128·128),
    # 9 expert visits of an FP8 input (h) and FP8 SwiGLU inputs (2·2048).
    per_token = 4 * h + 2 * (1536 + 512 + 64) + 4 * 256 + heads * 128 + 9 * (h + 2 * 2048)
    # DualPipe keeps PP + 1 = 17 micro-batches, half on each of the rank's two stages.
    assert mid["activations"] == pytest.approx(8 * 17 / 2 * per_token * 4096 / GB, rel=0.01)

    # Rank 15 (and rank 0) holds stage 15 (layers 58-60, MoE, the output head and the MTP
    # module) and stage 0 (the embedding, layers 0-2 with a dense MLP of 18432, layer 3 MoE).
    # The MTP module (§2.2): one more MoE block, M_1 of 2h x h and three RMSNorms; embedding
    # and head shared. The head's final norm: h.
    vocab = 129280
    dense_layer = attn + 2 * h + 3 * h * 18432
    mtp_dense = dense + 2 * h * h + 3 * h
    end_dense = 3 * dense_layer + 4 * dense + 2 * vocab * h + h + mtp_dense
    end_expert = 5 * expert  # 4 MoE layers and the MTP block's routed experts, EP64
    end = stages[15]["memory_gb"]
    assert stages[0]["memory_gb"] == end
    assert end["weights"] == pytest.approx((end_dense + end_expert) * 2 / GB, rel=0.01)
    assert end["gradients"] == pytest.approx((end_dense + end_expert) * 4 / GB, rel=0.01)
    end_opt = (end_dense / 128 + end_expert / 2) * 8
    assert end["optimizer"] == pytest.approx(end_opt / GB, rel=0.01)
    # A dense layer keeps what an MoE layer does less the router and the expert visits, plus
    # FP8 SwiGLU inputs (2·18432). The MTP module keeps, besides its block, the inputs of its
    # two RMSNorms (2 x 2h; the normalised concatenation is recomputed with the norms). The
    # head adds fp32 logits, 4·s·(h + V), once for the main loss and once for the MTP loss.
    dense_token = 4 * h + 2 * (1536 + 512 + 64) + heads * 128 + 2 * 18432
    chunks = (3 * per_token + per_token + 4 * h) + (3 * dense_token + per_token)
    logits = 2 * 4 * 4096 * (h + vocab)
    assert end["activations"] == pytest.approx((17 / 2 * chunks * 4096 + logits) / GB, rel=0.01)
    # The fullest ranks are the two ends; the report's statement is a bound: it fits 80 GiB.
    states = (end_dense + end_expert) * 6 + end_opt
    fullest = states + 17 / 2 * chunks * 4096 + logits + OVERHEAD_GB * GB
    assert c["memory_per_gpu_gb"]["total"] == pytest.approx(fullest / GB, rel=0.01)
    assert c["memory_per_gpu_gb"]["total"] < 80 * 2**30 / GB


def test_deepseek_v3_without_the_savings_does_not_fit(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    args = ("--card", "h800-sxm", "--gpus", "2048", "--tp", "1", "--pp", "16", "--ep", "64")
    text = DEEPSEEK.split("    memory_savings")[0]
    c = _estimate(gpusolve, tmp_path, text, *args, "--zero", "1", "--recompute", "none")
    assert not c["fits"]


# --------------------------------------------------------------------------- schedules


def test_1f1b_rank_i_holds_pp_minus_i_micro_batches() -> None:
    # Narayanan et al. 2021 §2.2.1: the first stage keeps PP micro-batches in flight.
    assert [in_flight("1f1b", 4, 1, 8, r) for r in range(4)] == [
        ((4.0,),),
        ((3.0,),),
        ((2.0,),),
        ((1.0,),),
    ]
    assert in_flight("1f1b", 4, 1, 2, 0) == ((2.0,),)  # fewer micro-batches than stages


def test_interleaved_first_rank_matches_korthikanti_with_many_micro_batches() -> None:
    # Korthikanti §4.2.3: the first stage of the interleaved schedule holds
    # PP·(1 + (PP − 1)/(PP·VP)) stage micro-batches: for PP 4, VP 2 that is 5.5 of 2 chunks,
    # i.e. 11 chunk micro-batches (Megatron: warm-up (4 − 1)·2 + (2 − 1)·4 = 10, plus one).
    states = in_flight("interleaved", 4, 2, 64, 0)
    assert max(sum(s) for s in states) == 11


def test_splits_trim_the_chunk_next_to_embedding_and_loss() -> None:
    split = split_stages(126, 16, 8, "interleaved", first=7, last=7)
    assert split.chunk_layers(0) == (0, 1, 1, 1, 1, 1, 1, 1)
    assert split.chunk_layers(15) == (1, 1, 1, 1, 1, 1, 1, 0)
    assert rank_layers(10, 3, per_stage=(2, 5, 3)) == (2, 5, 3)
    with pytest.raises(SplitError, match="adds up to 9"):
        rank_layers(10, 3, per_stage=(2, 4, 3))
    with pytest.raises(SplitError, match="lists 2 stages"):
        rank_layers(10, 3, per_stage=(5, 5))


def test_a_bad_pipeline_block_is_a_located_error(
    gpusolve: Callable[..., Any], tmp_path: Path
) -> None:
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text(LLAMA3.replace("first_stage_layers: 7", "first_stage_layers: -1"))
    res = gpusolve("estimate", str(reqs))
    assert res.code == 2
    assert "reqs.yaml:13:" in res.err and "first_stage_layers" in res.err
    reqs.write_text(DEEPSEEK.replace("bf16_moments]", "bf16_moment]"))
    res = gpusolve("estimate", str(reqs))
    assert res.code == 2 and "memory_savings" in res.err and "Traceback" not in res.err


# --------------------------------------------------------------------------- step time


def _llama8b(**over: Any) -> Any:
    from gpusolve.models.requirements import ModelShape, make_workload

    base: dict[str, Any] = {
        "name": "l8",
        "kind": "pretrain",
        "model": ModelShape(preset="llama-3-8b"),
        "seq_len": 4096,
        "tokens": 1e9,
    }
    return make_workload(**{**base, **over})


def test_dualpipe_shrinks_the_bubble_by_its_published_ratio() -> None:
    from tests.factories.hardware import H100, hgx

    from gpusolve.estimate import Layout, evaluate

    lay = Layout(nodes=1, tp=1, pp=8, dp=1, micro_batch=1, grad_accum=32)
    plain = evaluate(_llama8b(), hgx(H100), lay, Params()).step
    dual = evaluate(_llama8b(pipeline={"schedule": "dualpipe"}), hgx(H100), lay, Params()).step
    assert plain is not None and dual is not None

    # DeepSeek-V3 Table 2: (PP/2 − 1) against 1F1B's (PP − 1) for PP 8: 3/7, in units of the
    # pacing rank's micro-batch.
    def per_micro(step: Any) -> float:
        on_path = step.compute_s + step.recompute_s + step.tp_comm_s + step.cp_comm_s
        return float(on_path + step.ep_comm_s + step.pp_comm_s) / lay.grad_accum

    assert dual.bubble_s / per_micro(dual) == pytest.approx(
        plain.bubble_s / per_micro(plain) * 3 / 7
    )
    # DualPipe's end rank holds the first stage beside the last: half the head per micro-batch.
    assert dual.compute_s < plain.compute_s


def test_offloading_moves_the_optimizer_to_the_host_link() -> None:
    from tests.factories.hardware import H100, hgx

    from gpusolve.estimate import Layout, evaluate
    from gpusolve.estimate.hardware import pcie_peer_bidir_gbs

    lay = Layout(nodes=1, tp=1, pp=1, dp=8, sharding="zero2", micro_batch=1, grad_accum=4)
    w = _llama8b(memory_savings=["offload_optimizer"])
    est = evaluate(w, hgx(H100), lay, Params())
    assert est.memory.optimizer_bytes == 0.0 and est.step is not None
    # Gradients (4 B, fp32) down and bf16 weights (2 B) up for this rank's 1/8 share.
    share = est.checkpoint_weights_bytes / 2 / 8  # parameters on this GPU's shard
    link = pcie_peer_bidir_gbs(H100) * 1e9 / 2
    assert est.step.optimizer_s == pytest.approx(share * (4 + 2) / link, rel=1e-6)
