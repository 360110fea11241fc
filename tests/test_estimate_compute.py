"""FLOPs, time, bottleneck, communication and checkpoints against published figures."""

from __future__ import annotations

import pytest

from gpusolve.estimate import Hardware, Layout, evaluate, resolve_arch
from gpusolve.estimate.checkpoint import checkpoint_stall, training_checkpoint
from gpusolve.estimate.comm import ring_allgather_s, ring_allreduce_s
from gpusolve.estimate.compute import peak_flops_per_s, training_time_s
from gpusolve.models.requirements import Measured, ModelShape, Workload
from gpusolve.params import Params
from test_estimate_cards import A100_80, H20, H100, L40S, hgx, pcie_box

GB = 1e9


def _llama70_pretrain() -> Workload:
    return Workload(
        name="llama2-70b",
        kind="pretrain",
        model=ModelShape(preset="llama-2-70b"),
        tokens=2e12,
        seq_len=4096,
        global_batch=1024,
    )


def test_llama2_70b_gpu_hours_match_meta_within_3_percent() -> None:
    # Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned Chat Models", Table 2
    # (CO2 emissions during pretraining): Llama 2 70B took 1,720,320 GPU-hours on A100-80GB
    # for 2T tokens. 6·N·D at MFU 0.43 of the A100's 312 dense BF16 TFLOPS reproduces it.
    meta_gpu_hours = 1_720_320
    arch = resolve_arch(ModelShape(preset="llama-2-70b"))
    peak = peak_flops_per_s(A100_80, "bf16")
    assert peak == 312e12
    hours = training_time_s(6 * arch.params * 2e12, 1, peak, 0.43) / 3600
    assert hours == pytest.approx(meta_gpu_hours, rel=0.03)
    # The same through evaluate(): one GPU (no communication, bubble or node penalty),
    # the paper's 4M-token batch, fast storage so checkpoint stalls are negligible.
    hw = hgx(A100_80, storage_gbs=20)
    est = evaluate(_llama70_pretrain(), hw, Layout(1, 1, 1, 1, grad_accum=1024), Params(mfu=0.43))
    assert est.time_to_train_s is not None
    assert est.time_to_train_s * est.gpus / 3600 == pytest.approx(meta_gpu_hours, rel=0.03)
    assert not est.fits  # 70B does not fit one GPU, and says so
    assert est.reasons[0].startswith("needs ")


def test_full_recompute_adds_a_forward_8nd_and_the_h10_time_overhead() -> None:
    w = Workload(name="ft", kind="full_finetune", model=ModelShape(params_b=7), tokens=1e9)
    hw, p = hgx(H100), Params()
    none = evaluate(w, hw, Layout(1, 1, 1, 8, "zero3", "none"), p)
    full = evaluate(w, hw, Layout(1, 1, 1, 8, "zero3", "full"), p)
    assert none.flops == pytest.approx(6 * 7e9 * 1e9)  # 6·N·D
    assert full.flops == pytest.approx(8 * 7e9 * 1e9)  # + the recompute forward
    assert full.model_flops == none.model_flops
    # H10: gradient checkpointing cuts activation memory and costs 20–30% more time
    # (Params.recompute_time_overhead, 25% by default; no communication here to blur it).
    assert full.memory.activations < 0.1 * none.memory.activations
    compute = [(e.step_time_s or 0) * (1 - e.comm_fraction) for e in (none, full)]
    assert compute[1] / compute[0] == pytest.approx(1 + p.recompute_time_overhead, rel=1e-6)


def test_more_gpus_shorten_training_time() -> None:
    w = _llama70_pretrain()
    p = Params()
    t64 = evaluate(w, hgx(H100), Layout(8, 8, 1, 8, "zero1", grad_accum=16), p)
    t128 = evaluate(w, hgx(H100), Layout(16, 8, 1, 16, "zero1", grad_accum=8), p)
    assert t64.time_to_train_s and t128.time_to_train_s
    assert t128.time_to_train_s < t64.time_to_train_s


def test_bottleneck_training_is_compute_and_decode_is_memory_bandwidth() -> None:
    # H03: dense transformer training is limited by tensor throughput; H07: decoding moves
    # every weight per token, so its intensity sits far below the ridge point.
    train = Workload(
        name="ft", kind="full_finetune", model=ModelShape(preset="llama-2-7b"), tokens=1e9
    )
    est = evaluate(train, hgx(H100), Layout(1, 1, 1, 8, "zero1", micro_batch=2), Params())
    assert est.bottleneck == "compute"
    assert est.ridge_point is not None and est.arithmetic_intensity > est.ridge_point
    serve = Workload(
        name="chat",
        kind="inference",
        model=ModelShape(preset="llama-2-13b"),
        context_len=4096,
        concurrency=8,
    )
    dec = evaluate(serve, hgx(H100), Layout(1, 1, 1, 1, micro_batch=8), Params())
    assert dec.bottleneck == "memory_bandwidth"
    assert dec.arithmetic_intensity < (dec.ridge_point or 0)


def test_decode_roofline_is_bandwidth_over_bytes() -> None:
    # Batch 1, short context: time per token ≈ weight bytes / (bandwidth × efficiency).
    w = Workload(
        name="chat",
        kind="inference",
        precision="fp16",
        model=ModelShape(params_b=13),
        context_len=128,
        concurrency=1,
    )
    p = Params()
    est = evaluate(w, hgx(A100_80), Layout(1, 1, 1, 1, micro_batch=1), p)
    expected = 2039e9 * p.inference_efficiency / 26e9
    assert est.tokens_per_s == pytest.approx(expected, rel=0.02)
    # A higher-bandwidth card decodes faster (H07): H20 has 4 TB/s against 2 TB/s.
    faster = evaluate(w, hgx(H20), Layout(1, 1, 1, 1, micro_batch=1), p)
    assert faster.tokens_per_s > 1.9 * est.tokens_per_s


def test_inference_replicas_multiply_throughput_and_targets_are_checked() -> None:
    w = Workload(
        name="chat",
        kind="inference",
        model=ModelShape(preset="llama-2-13b"),
        context_len=2048,
        target_tokens_per_s=100_000,
    )
    p = Params()
    one = evaluate(w, hgx(H100), Layout(1, 1, 1, 1, micro_batch=16, replicas=1), p)
    four = evaluate(w, hgx(H100), Layout(1, 1, 1, 1, micro_batch=16, replicas=4), p)
    assert four.tokens_per_s == pytest.approx(4 * one.tokens_per_s)
    assert four.gpus == 4
    assert any("below the target 100,000 tokens/s" in r for r in four.reasons)


def test_ring_collectives() -> None:
    assert ring_allreduce_s(8e9, 8, 1e9) == pytest.approx(2 * 7 / 8 * 8)
    assert ring_allgather_s(8e9, 8, 1e9) == pytest.approx(7 / 8 * 8)
    assert ring_allreduce_s(8e9, 1, 1e9) == 0


def test_data_parallel_over_pcie_or_slow_fabric_is_communication_bound() -> None:
    # H08/H09/H11: DDP gradients (2 bytes × N per step) over NVLink are cheap; over a
    # 25 Gbit/s-per-GPU fabric they dominate and the layout is rejected above 15%.
    w = Workload(
        name="ft",
        kind="full_finetune",
        model=ModelShape(preset="llama-2-7b"),
        tokens=1e9,
        global_batch=32,
    )
    p = Params()
    nvlink = evaluate(w, hgx(H100), Layout(1, 1, 1, 8, "zero1", grad_accum=4), p)
    assert nvlink.comm_fraction < p.comm_threshold
    slow = evaluate(w, pcie_box(L40S, fabric_gbps_per_gpu=25), Layout(2, 1, 1, 16, "zero1"), p)
    assert slow.comm_fraction > p.comm_threshold
    assert slow.bottleneck == "communication"
    assert any("threshold (H11" in r and "inter-node fabric" in r for r in slow.reasons)


def test_no_fabric_means_no_multi_node_job() -> None:
    w = Workload(name="ft", kind="full_finetune", model=ModelShape(params_b=7), tokens=1e9)
    hw = Hardware(A100_80, 8, 600, 0.0, 20)
    est = evaluate(w, hw, Layout(2, 1, 1, 16, "zero3"), Params())
    assert any("no inter-node fabric" in r for r in est.reasons)


def test_checkpoint_size_h16() -> None:
    # H16: a 7B checkpoint with optimizer state is ≈ 84 GB (fp32 master + two moments) or
    # ≈ 98 GB with the bf16 weights; weights only 14 GB.
    size = training_checkpoint(
        kind="full_finetune", params=7e9, adapter_params=0, precision="bf16", optimizer="adamw"
    )
    assert size.full_bytes / GB == pytest.approx(98.0)
    assert size.weights_bytes / GB == pytest.approx(14.0)
    lora = training_checkpoint(
        kind="lora", params=7e9, adapter_params=40e6, precision="bf16", optimizer="adamw"
    )
    assert lora.full_bytes / GB == pytest.approx(0.48)


def test_checkpoint_stall_at_hdd_speed_blocks_the_layout() -> None:
    # H16: at 50 MB/s one save of a 7B checkpoint stalls for minutes; saved every 1,000
    # steps it eats far more than 5% of training time.
    stall = checkpoint_stall(
        checkpoint_bytes=98e9, writers=1, write_bytes_per_s=50e6, steps=10_000, interval_steps=1000
    )
    assert stall.save_time_s == pytest.approx(1960)
    assert stall.saves == 10
    w = Workload(
        name="ft",
        kind="full_finetune",
        model=ModelShape(params_b=7),
        tokens=2e9,
        global_batch=64,
    )
    slow_disk = hgx(H100, storage_gbs=0.05)
    est = evaluate(w, slow_disk, Layout(1, 1, 1, 8, "zero1", micro_batch=2, grad_accum=4), Params())
    assert est.checkpoint_stall_fraction > 0.05
    assert any("checkpoint stall" in r and "(H16)" in r for r in est.reasons)
    nvme = evaluate(
        w, hgx(H100), Layout(1, 1, 1, 8, "zero1", micro_batch=2, grad_accum=4), Params()
    )
    assert nvme.checkpoint_stall_fraction < 0.05


def test_memory_reason_names_numbers() -> None:
    w = Workload(name="ft", kind="full_finetune", model=ModelShape(params_b=7), tokens=1e9)
    est = evaluate(w, hgx(H20), Layout(1, 1, 1, 1), Params(headroom=0.3))
    assert est.reasons[0] == (
        f"needs {est.memory.total / GB:.1f} GB per GPU; h20-96gb (96 GB) with 30% headroom "
        "gives 67.2 GB"
    )
    assert est.capacity_bytes == pytest.approx(96e9 * 0.7)


def test_measured_run_replaces_the_mfu_assumption_h12() -> None:
    base = {
        "name": "ft",
        "kind": "full_finetune",
        "model": ModelShape(preset="llama-2-7b"),
        "tokens": 1e9,
    }
    lay, hw = Layout(1, 1, 1, 8, "zero1", micro_batch=2, grad_accum=4), hgx(H100)
    assumed = evaluate(Workload(**base), hw, lay, Params())
    # A measured MFU replaces Params.mfu on any card.
    low = evaluate(
        Workload(**base, measured=Measured(card="a100-80gb-sxm", gpus=8, mfu=0.2)),
        hw,
        lay,
        Params(),
    )
    assert low.time_to_train_s and assumed.time_to_train_s
    assert low.time_to_train_s > 1.8 * assumed.time_to_train_s
    # A measured tokens/s on this card replaces the MFU model, scaled by GPU count.
    rate = Workload(**base, measured=Measured(card="h100-sxm", gpus=4, tokens_per_s=12_000))
    est = evaluate(rate, hw, lay, Params())
    assert est.measured
    assert est.tokens_per_s == pytest.approx(12_000 / 4 * 8, rel=0.02)
    other_card = evaluate(rate, hgx(A100_80), lay, Params())
    assert not other_card.measured
