"""The layout space real clusters use, memory as the device reports it, limits from sites."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.factories.catalog import colo_offer, server
from tests.factories.hardware import A100_80, H100, hgx
from tests.factories.requirements import preset_workload

from gpusolve.candidates.sizing import node_limit
from gpusolve.estimate import Layout, evaluate, resolve_arch, search_layouts
from gpusolve.estimate.activations import kv_cache_bytes_per_token
from gpusolve.models.catalog import Card, ColoOffer, Server
from gpusolve.models.params import Params, check_value
from gpusolve.models.requirements import ModelShape, Workload

GB = 1e9


def _pretrain(preset: str, **over: object) -> Workload:
    return preset_workload(preset, **{"tokens": 1e10, "micro_batch": 1, **over})


# --------------------------------------------------------------------------- MoE and MLA


def test_deepseek_v3_shape_counts_and_its_latent_kv_cache() -> None:
    # DeepSeek-V3 report §4.2: 671B total, 37B active; MLA caches kv_lora_rank + rope dim
    # (512 + 64) per token and layer: 61 x 576 x 2 B = 70,272 B, where grouped-query
    # attention with 128 heads of 128 would cache 2 x 128 x 128 x 61 x 2 = 4 MB.
    arch = resolve_arch(ModelShape(preset="deepseek-v3"))
    assert arch.params / 1e9 == pytest.approx(671, rel=0.01)
    assert arch.active_params / 1e9 == pytest.approx(37, rel=0.03)
    assert arch.is_mla and arch.shared_experts == 1 and arch.dense_layers == 3
    assert kv_cache_bytes_per_token(arch, 2.0) == 61 * 576 * 2


def test_node_limited_routing_sends_fewer_copies_across_nodes() -> None:
    # A token sent to at most k nodes, once per node (DeepSeek-V3 §3.2.2), crosses the
    # fabric less often as k falls (the preset's 4; at 1, once).
    limited = _pretrain("deepseek-v3", precision="fp8", seq_len=4096, global_batch=1024).model_copy(
        update={"model": ModelShape(preset="deepseek-v3", routing_node_limit=1)}
    )
    free = _pretrain("deepseek-v3", precision="fp8", seq_len=4096, global_batch=1024)
    lay = Layout(64, 1, 16, 32, "zero1", micro_batch=1, grad_accum=32, ep=32)
    a = evaluate(limited, hgx(H100), lay, Params()).step
    b = evaluate(free, hgx(H100), lay, Params()).step
    assert a is not None and b is not None
    assert 0 < a.ep_comm_s < b.ep_comm_s


def test_search_spans_expert_parallelism_across_nodes_for_a_large_moe() -> None:
    w = _pretrain("mixtral-8x22b", tokens=1e11, seq_len=4096, global_batch=256)
    res = search_layouts(w, hgx(H100), Params(), max_nodes=16)
    assert res.feasible
    assert any(e.layout.ep > 1 for e in res.feasible)


# --------------------------------------------------------------------------- CP, SP, VP


def test_context_parallelism_splits_the_sequence_and_pays_a_ring() -> None:
    w = _pretrain("llama-3-8b", seq_len=65536, gradient_checkpointing="none")
    one = evaluate(w, hgx(H100), Layout(1, 8, 1, 1, cp=1), Params())
    four = evaluate(w, hgx(H100), Layout(4, 8, 1, 1, cp=4), Params())
    assert four.memory.activations_bytes == pytest.approx(
        one.memory.activations_bytes / 4, rel=0.05
    )
    assert four.step is not None and four.step.cp_comm_s >= 0
    odd_seq = w.model_copy(update={"seq_len": 1002})
    odd = evaluate(odd_seq, hgx(H100), Layout(1, 2, 1, 1, cp=4), Params())
    assert any("CP 4" in r for r in odd.reasons)


def test_sequence_parallelism_off_keeps_replicated_activations() -> None:
    # Korthikanti Table 2: without SP, 10·s·b·h per layer stay on every TP rank.
    w = _pretrain("llama-2-13b", gradient_checkpointing="none", flash_attention=True)
    sp = evaluate(w, hgx(H100), Layout(1, 8, 1, 1, sequence_parallel=True), Params())
    no = evaluate(w, hgx(H100), Layout(1, 8, 1, 1, sequence_parallel=False), Params())
    assert no.memory.activations_bytes > 1.5 * sp.memory.activations_bytes


def test_interleaving_holds_more_micro_batches_in_flight() -> None:
    # Korthikanti §4.2.3: the first stage holds p·(1 + (p − 1)/(p·v)) micro-batches.
    w = _pretrain("llama-2-70b", seq_len=4096, global_batch=64)
    plain = evaluate(w, hgx(H100), Layout(4, 8, 4, 1, micro_batch=1, grad_accum=64), Params())
    inter = evaluate(w, hgx(H100), Layout(4, 8, 4, 1, micro_batch=1, grad_accum=64, vp=5), Params())
    ratio = inter.memory.activations_bytes / plain.memory.activations_bytes
    assert ratio == pytest.approx(1 + 3 / (4 * 5), rel=0.02)


def test_zero3_gathered_layers_are_their_own_line() -> None:
    w = _pretrain("llama-2-7b")
    z1 = evaluate(w, hgx(H100), Layout(1, 1, 1, 8, "zero1"), Params()).memory
    z3 = evaluate(w, hgx(H100), Layout(1, 1, 1, 8, "zero3"), Params()).memory
    assert z1.gathered_weights_bytes == 0
    arch = resolve_arch(w.model)
    assert z3.gathered_weights_bytes == pytest.approx(2 * arch.layer_params * 2, rel=0.05)
    assert z3.weights_bytes == pytest.approx(arch.params * 2 / 8)


# --------------------------------------------------------------------------- memory


def _card(**over: object) -> Card:
    return Card.model_validate({**A100_80.model_dump(), **over})


def test_device_memory_follows_nvidia_smi_and_ecc() -> None:
    assert _card(memory_gb=80, memory_type="HBM3").reported_memory_bytes == 80 * 2**30
    l40s = _card(memory_gb=48, memory_type="GDDR6", form_factor="pcie")
    assert l40s.reported_memory_bytes == pytest.approx(46068 * 2**20, rel=0.01)
    consumer = _card(memory_gb=24, memory_type="GDDR6X", form_factor="consumer")
    assert consumer.reported_memory_bytes == 24 * 2**30


def test_a_reported_size_that_contradicts_the_marketed_one_is_refused() -> None:
    with pytest.raises(ValueError, match="memory_reported_mib"):
        _card(memory_gb=96, memory_reported_mib=81559)


def test_nccl_buffers_only_when_gpus_talk() -> None:
    w = _pretrain("llama-2-7b")
    one = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1), Params()).memory
    eight = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 8, "zero3"), Params()).memory
    assert one.overhead_bytes == pytest.approx(1.0 * GB)
    assert eight.overhead_bytes == pytest.approx(2.5 * GB)


# --------------------------------------------------------------------------- parameters


def test_removed_parameters_say_what_replaced_them() -> None:
    with pytest.raises(ValueError, match="MFU is now computed"):
        check_value("mfu", 0.4)
    with pytest.raises(ValueError, match="collectives on the fabric"):
        check_value("multi_node_penalty", 0.05)
    with pytest.raises(ValueError, match="one of none, backward, full"):
        check_value("tp_comm_overlap", "sometimes")
    assert check_value("tp_comm_overlap", "full") == "full"


def test_tensor_parallel_overlap_hides_backward_collectives() -> None:
    w = _pretrain("llama-2-70b", seq_len=4096, global_batch=16)
    lay = Layout(2, 8, 1, 2, "zero1", micro_batch=1, grad_accum=8)
    none = evaluate(w, hgx(A100_80), lay, Params(tp_comm_overlap="none")).step
    back = evaluate(w, hgx(A100_80), lay, Params(tp_comm_overlap="backward")).step
    full = evaluate(w, hgx(A100_80), lay, Params(tp_comm_overlap="full")).step
    assert none is not None and back is not None and full is not None
    assert none.tp_comm_s > back.tp_comm_s > full.tp_comm_s >= 0


# --------------------------------------------------------------------------- sites


def _server() -> Server:
    return server(power_kw=6.5, rack_units=6, cooling=["liquid", "air"])


def _site(**over: object) -> ColoOffer:
    return colo_offer(cooling="liquid", rack_kw=40, rack_units=48, racks_available=300, **over)


def test_a_site_s_room_bounds_how_far_a_job_spans() -> None:
    # 300 racks of 40 kW take six 6.5 kW servers each (7 x 6 U = 42 of 48 U): 1,800 servers.
    assert node_limit(_server(), [_site()]) == 1800
    assert node_limit(_server(), [_site(fabric_max_nodes=512)]) == 512
    # A site without an RDMA fabric hosts single-server jobs; replicas need no fabric.
    ethernet = _site(fabric="ethernet")
    assert node_limit(_server(), [ethernet]) == 1
    assert node_limit(_server(), [ethernet], needs_fabric=False) == 1800


def test_oversubscription_slows_what_crosses_the_spine() -> None:
    w = _pretrain("llama-2-13b", seq_len=4096, global_batch=256)
    lay = Layout(16, 1, 1, 128, "zero1", micro_batch=2, grad_accum=1)
    hw = hgx(A100_80, fabric_gbps_per_gpu=200)
    flat = evaluate(w, hw, lay, Params()).step
    tapered = evaluate(w, replace(hw, oversubscription=4.0), lay, Params()).step
    assert flat is not None and tapered is not None
    assert tapered.dp_comm_total_s > 2 * flat.dp_comm_total_s
