"""MoE services searched as engines run them: experts sliced over a replica's TP ranks (every
engine's default), whole experts a rank (EP), and attention data-parallel with the tokens sent
to their experts and back, also across servers; the layouts' flags in the launch files."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

from tests.factories.requirements import deepseek_v3_service
from tests.support.launched import flags_of, listed
from tests.support.validation_cases import _hgx
from tests.support.validation_serving import QWEN3_235B

from gpusolve.estimate import search_layouts
from gpusolve.estimate.moeserve import moe_splits
from gpusolve.estimate.replicas import ReplicaShape, replica_shapes
from gpusolve.estimate.shapes import resolve_arch
from gpusolve.models.params import Params
from gpusolve.models.plan import Deployment
from gpusolve.models.requirements import InferenceWorkload, ModelShape
from gpusolve.render.launch.serving import SGLANG, VLLM, serve_args

H800 = _hgx("h800-sxm", 400, 400)  # HGX H800: NVLink 400 GB/s, 8 x 400 Gb/s InfiniBand


def _deepseek(**over: object) -> InferenceWorkload:
    """test_serving_concurrency's DeepSeek-V3 service, aggregated unless asked."""
    return deepseek_v3_service(**{"disaggregation": "auto", **over})


def test_each_tp_degree_of_an_moe_model_is_tried_three_ways() -> None:
    mixtral = resolve_arch(ModelShape(preset="mixtral-8x7b"))  # 8 experts, GQA
    dense = resolve_arch(ModelShape(preset="llama-3-8b"))
    deepseek = resolve_arch(ModelShape(preset="deepseek-v3"))  # 256 experts, MLA
    # Inside a server: sliced and EP under TP attention; attention DP too for MLA only.
    assert moe_splits(mixtral, 4, 8) == [(1, False), (4, False)]
    assert moe_splits(deepseek, 8, 8) == [(1, False), (8, False), (8, True)]
    # One GPU has nothing to split; a dense model only slices.
    assert moe_splits(mixtral, 1, 8) == [(1, False)]
    assert moe_splits(dense, 8, 8) == [(1, False)]
    # 8 experts cannot spread over 16 ranks: sliced only, and only inside a 16-GPU server.
    assert moe_splits(mixtral, 16, 16) == [(1, False)]
    assert moe_splits(mixtral, 16, 8) == []
    # Across servers only attention DP, GQA or MLA: TP attention stays inside a server (H08).
    assert moe_splits(deepseek, 32, 8) == [(32, True)]
    qwen3 = resolve_arch(QWEN3_235B)  # 128 experts, GQA
    assert moe_splits(qwen3, 8, 8) == [(1, False), (8, False)]
    assert moe_splits(qwen3, 16, 8) == [(16, True)]


def test_expert_parallel_replicas_span_servers_up_to_the_experts() -> None:
    deepseek = resolve_arch(ModelShape(preset="deepseek-v3"))
    shapes = replica_shapes(deepseek, H800, limit=64)
    spanning = [s for s in shapes if s.tp > 8]
    # 2, 4, ... 32 servers: EP16 ... EP256 (256 experts, one a rank at most).
    assert [s.tp for s in spanning] == [16, 32, 64, 128, 256]
    assert all(s.ep == s.tp and s.attention_dp and s.pp == 1 for s in spanning)
    # Inside a server each TP degree three ways (TP1 only sliced), then PP over servers.
    assert ReplicaShape(8, 1, 8, False) in shapes and ReplicaShape(8, 1, 8, True) in shapes
    assert ReplicaShape(8, 2) in shapes
    # Without a fabric nothing spans servers.
    lone = replace_fabric(H800)
    assert all(s.tp * s.pp <= 8 for s in replica_shapes(deepseek, lone, limit=64))


def replace_fabric(hw: Any) -> Any:
    from dataclasses import replace

    return replace(hw, inter_node_gbps_per_gpu=0.0)


def test_deepseek_v3_on_h800_decodes_expert_parallel_across_servers() -> None:
    # 671 GB of FP8 weights do not fit a server's 8 x 80 GB: a replica spans servers, either
    # pipelined (TP8 PP2) or with its experts spread over them (EP16 and up, attention DP).
    result = search_layouts(_deepseek(), H800, Params(), max_nodes=32, every_size=True)
    spread = [e for e in result.feasible if e.layout.attention_dp]
    assert spread, result.rejections
    for est in spread:
        lay = est.layout
        assert lay.ep == lay.tp > 8 and lay.nodes >= 2
        assert est.serving is not None and est.serving.sequences == 256


def test_deepseek_v3_disaggregated_pools_may_spread_experts() -> None:
    result = search_layouts(_deepseek(disaggregation="only"), H800, Params(), max_nodes=32)
    (est,) = result.feasible
    v = est.serving
    assert v is not None and v.disaggregated is not None
    pools = v.disaggregated
    # The decode pool is the estimate's layout; its expert split travels with the pools.
    assert (pools.decode_ep, pools.decode_attention_dp) == (est.layout.ep, est.layout.attention_dp)
    assert pools.decode_tp * pools.decode_pp > 8  # spans servers either way


def test_estimate_takes_an_explicit_attention_dp_layout(gpusolve: Any, tmp_path: Path) -> None:
    reqs = tmp_path / "r.yaml"
    reqs.write_text(
        "workloads:\n"
        "  - {name: ds, kind: inference, model: {preset: deepseek-v3}, precision: fp8,\n"
        "     prompt_tokens: 2000, output_tokens: 500, concurrency: 256}\n",
        encoding="utf-8",
    )
    res = gpusolve(
        "estimate", str(reqs), "--card", "h800-sxm", "--gpus", "16", "--tp", "16",
        "--attention-dp", "--format", "json",
    )  # fmt: skip
    assert res.code == 0, res.err
    (config,) = json.loads(res.out)["workloads"][0]["configs"]
    assert (config["tp"], config["ep"], config["attention_dp"]) == (16, 16, True)
    assert config["gpus"] == 16
    train = tmp_path / "t.yaml"
    train.write_text(
        "workloads:\n"
        "  - {name: t, kind: pretrain, model: {preset: llama-3-8b}, tokens: 1.0e9,\n"
        "     deadline_hours: 100}\n",
        encoding="utf-8",
    )
    res = gpusolve("estimate", str(train), "--card", "h800-sxm", "--attention-dp", "--tp", "8")
    assert res.code == 2 and "--attention-dp" in res.err


def _deployment(tp: int, ep: int, attention_dp: bool, batch: int) -> Deployment:
    parallel = {
        "tp": tp, "pp": 1, "dp": 1, "ep": ep, "attention_dp": attention_dp, "zero_stage": 0,
        "gradient_checkpointing": "none", "micro_batch": batch, "grad_accum": 1,
    }  # fmt: skip
    fields = {
        "workload": "ds", "mode": "cloud", "card": "h800-sxm", "servers": tp // 8 or 1,
        "gpus": tp, "parallel": parallel, "memory_per_gpu_gb": 60.0,
        "memory_parts_gb": {}, "card_memory_gb": 80.0, "usable_memory_gb": 64.0,
        "headroom": 0.2, "throughput": 1.0, "replicas": 1, "server": None, "site": None,
        "schedule": "always", "time_to_train_h": None,
    }  # fmt: skip
    return Deployment.model_validate(fields)


def test_launch_flags_say_the_expert_split() -> None:
    w = _deepseek()
    vllm_flags, sglang_flags = listed("vllm.flags"), listed("sglang.flags")
    # EP16 with attention DP over two servers, 250 sequences: vLLM runs 16 DP ranks of TP 1,
    # each scheduling its own ceil(250 / 16) = 16; SGLang keeps TP 16 and the global cap.
    d = _deployment(16, 16, True, 250)
    vllm = flags_of(serve_args(VLLM, d, w, 8000))
    assert set(vllm) <= vllm_flags, set(vllm) - vllm_flags
    assert vllm["--tensor-parallel-size"] == "1" and vllm["--data-parallel-size"] == "16"
    assert vllm["--max-num-seqs"] == str(math.ceil(250 / 16))
    assert "--enable-expert-parallel" in vllm
    assert vllm["--all2all-backend"] == "deepep_low_latency"
    sglang = flags_of(serve_args(SGLANG, d, w, 8000))
    assert set(sglang) <= sglang_flags, set(sglang) - sglang_flags
    assert (sglang["--tp-size"], sglang["--ep-size"], sglang["--dp-size"]) == ("16", "16", "16")
    assert "--enable-dp-attention" in sglang and sglang["--max-running-requests"] == "250"
    assert sglang["--moe-a2a-backend"] == "deepep"
    # EP8 under TP attention: the EP flag only.
    d = _deployment(8, 8, False, 64)
    vllm = flags_of(serve_args(VLLM, d, w, 8000))
    assert vllm["--tensor-parallel-size"] == "8" and "--enable-expert-parallel" in vllm
    assert "--data-parallel-size" not in vllm and vllm["--max-num-seqs"] == "64"
    sglang = flags_of(serve_args(SGLANG, d, w, 8000))
    assert sglang["--ep-size"] == "8" and "--enable-dp-attention" not in sglang
    # Experts sliced (every engine's default): no MoE flag at all.
    line = " ".join(shlex.quote(t) for t in serve_args(VLLM, _deployment(8, 1, False, 64), w, 1))
    assert "expert" not in line and "data-parallel" not in line
