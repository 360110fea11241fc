"""`gpusolve estimate` end to end: text, JSON (against its schema), explicit layouts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gpusolve.models.estimate import EstimateReport
from gpusolve.models.schemas import schema_for

REQS = """\
workloads:
  - name: ft-7b
    kind: full_finetune
    model: {params_b: 7}
    tokens: 2.0e9
    global_batch: 64
    deadline_hours: 24
  - name: lora-7b
    kind: lora
    model: {params_b: 7}
    tokens: 1.0e8
  - name: chat-13b
    kind: inference
    precision: fp16
    model: {preset: llama-2-13b}
    context_len: 4096
    concurrency: 32
"""

# Two cards with datasheet figures (catalog-facts §1) and one 8-GPU server each.
CATALOG = """\
currency: CNY
cards:
  - id: a100-80gb-sxm
    name: NVIDIA A100 80GB SXM4
    vendor: nvidia
    memory_gb: 80
    memory_type: HBM2e
    memory_bandwidth_gbs: 2039
    tflops: {fp32: 19.5, tf32: 156, bf16: 312, fp16: 312, int8: 624}
    tdp_w: 400
    peer_link: nvlink
    peer_bandwidth_gbs: 600
    pcie_gen: 4
    form_factor: sxm
    confidence: V
    source: NVIDIA A100 datasheet r4
  - id: rtx-4090
    name: GeForce RTX 4090
    vendor: nvidia
    memory_gb: 24
    memory_type: GDDR6X
    memory_bandwidth_gbs: 1008
    tflops: {fp32: 82.6, tf32: 82.6, bf16: 165.2, fp16: 165.2, fp8: 330.3}
    tdp_w: 450
    peer_link: none
    peer_bandwidth_gbs: 0
    pcie_gen: 4
    form_factor: consumer
    confidence: V
    source: catalog-facts 1b
servers:
  - id: hgx-a100
    name: HGX A100 8-GPU
    card: a100-80gb-sxm
    gpus: 8
    topology: nvswitch
    peer_bandwidth_gbs: 600
    cpu: {model: EPYC 7742, sockets: 2, cores_total: 128, pcie_lanes: 128, base_ghz: 2.25}
    ram_gb: 2048
    fabric: {kind: infiniband, nics: 8, nic_gbps: 200}
    storage_write_gbs: 20
    power_kw: 6.5
    rack_units: 6
    cooling: [air]
    price: 1300000
    pricing: {illustrative: true, as_of: "2026-11", source: test}
    confidence: D
    source: test
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    reqs = tmp_path / "reqs.yaml"
    reqs.write_text(REQS)
    cat = tmp_path / "cat.yaml"
    cat.write_text(CATALOG)
    return reqs, cat


def _json(run: Callable[..., Any], *args: str) -> dict[str, Any]:
    res = run("estimate", *args, "--format", "json")
    assert res.code == 0, res.err
    data: dict[str, Any] = json.loads(res.out)
    return data


def test_help_says_gb_is_ten_to_the_ninth(gpusolve: Callable[..., Any]) -> None:
    res = gpusolve("estimate", "--help")
    assert res.code == 0
    assert "GB means 10^9 bytes" in res.out


def test_text_prints_formula_and_rules_of_thumb_side_by_side(
    gpusolve: Callable[..., Any], files: tuple[Path, Path]
) -> None:
    reqs, cat = files
    res = gpusolve("estimate", str(reqs), "--no-default-catalog", "--catalog", str(cat))
    assert res.code == 0, res.err
    out = res.out
    # H38's worked examples and H05's bound, labelled, next to the formula figure.
    assert "rule of thumb H30 (full fine-tune × 20; documents say 12–20): 7 × 20 = 140 GB" in out
    assert "rule of thumb H30 (LoRA × 6; documents say 4–6): 7 × 6 = 42 GB" in out
    assert "rule of thumb H05 (16–24 B/param): ≥ 112 GB" in out
    # The default keeps an fp32 gradient buffer: 2 + 4 + 12 = 18 B/param, 126 GB for 7B.
    assert "formula, whole job on one GPU:" in out and "(model states 126.0 GB)" in out
    assert "COARSE" in out  # params_b only: the shape is derived and says so
    assert "rule of thumb H30 (inference × 2; documents say 2–4): 13 × 2 = 26 GB" in out


def test_json_matches_its_schema_and_documented_keys(
    gpusolve: Callable[..., Any], files: tuple[Path, Path]
) -> None:
    reqs, cat = files
    data = _json(gpusolve, str(reqs), "--no-default-catalog", "--catalog", str(cat))
    jsonschema.validate(data, schema_for("estimate", EstimateReport))
    assert data["mode"] == "search"
    names = [w["name"] for w in data["workloads"]]
    assert names == ["ft-7b", "lora-7b", "chat-13b"]
    for w in data["workloads"]:
        assert w["configs"], w["name"]
        for c in w["configs"]:
            for key in (
                "card",
                "gpus",
                "tp",
                "pp",
                "dp",
                "zero_stage",
                "flops",
                "time_to_train_h",
                "comm_fraction",
                "checkpoint_gb",
                "bottleneck",
            ):
                assert key in c
            mem = c["memory_per_gpu_gb"]
            parts = sum(
                mem[k]
                for k in (
                    "weights",
                    "gradients",
                    "optimizer",
                    "activations",
                    "kv_cache",
                    "overhead",
                    "gathered_weights",
                )
            )
            assert mem["total"] == pytest.approx(parts)
            assert c["feasible"] and mem["total"] <= c["usable_memory_gb"]
            assert c["usable_memory_gb"] == pytest.approx(c["card_memory_gb"] * (1 - c["headroom"]))
    ft = data["workloads"][0]
    assert ft["arch"]["coarse"] is True
    assert ft["thumb"]["h30_gb"] == 140
    assert ft["thumb"]["formula_model_states_gb"] == pytest.approx(126)
    assert set(ft["fits_on"]) == {"a100-80gb-sxm", "rtx-4090"}
    # Smallest configuration first; the deadline-meeting one follows when it differs.
    assert ft["configs"][0]["gpus"] <= ft["configs"][-1]["gpus"]
    assert ft["configs"][-1]["meets_deadline"] or any("deadline" in r for r in ft["rejections"])
    chat = data["workloads"][2]
    assert chat["configs"][0]["time_to_train_h"] is None
    assert chat["configs"][0]["bottleneck"] == "memory_bandwidth"


def _explicit_on_a100(
    gpusolve: Callable[..., Any], files: tuple[Path, Path], *layout: str
) -> dict[str, Any]:
    reqs, cat = files
    return _json(
        gpusolve,
        str(reqs),
        "--no-default-catalog",
        "--catalog",
        str(cat),
        "--card",
        "a100-80gb-sxm",
        *layout,
    )


def test_explicit_layout_is_exactly_that_configuration(
    gpusolve: Callable[..., Any], files: tuple[Path, Path]
) -> None:
    data = _explicit_on_a100(
        gpusolve,
        files,
        "--gpus",
        "8",
        "--tp",
        "2",
        "--zero",
        "1",
    )
    assert data["mode"] == "explicit"
    ft = data["workloads"][0]
    assert len(ft["configs"]) == 1
    c = ft["configs"][0]
    assert (c["card"], c["gpus"], c["tp"], c["pp"], c["dp"], c["zero_stage"]) == (
        "a100-80gb-sxm",
        8,
        2,
        1,
        4,
        1,
    )
    assert c["micro_batch"] * c["grad_accum"] * c["dp"] == 64
    chat = data["workloads"][2]["configs"][0]
    assert (chat["tp"], chat["replicas"], chat["gpus"]) == (2, 4, 8)


def test_estimate_shows_the_decomposition_and_the_rules_headroom(
    gpusolve: Callable[..., Any],
) -> None:
    # The shipped day/night example: rule h29 raises the headroom to 25% for both workloads;
    # estimate sizes with it and says so, and every training configuration carries the parts
    # of its step, which add up to the step time and give the MFU.
    example = Path(__file__).resolve().parents[1] / "examples" / "chat-day-lora-night.yaml"
    text = gpusolve("estimate", str(example), "--card", "a100-80gb-sxm")
    assert text.code == 0, text.err
    assert "headroom 25%" in text.out and "headroom 20%" not in text.out
    assert "step time, s" in text.out and "bubble" in text.out
    data = _json(gpusolve, str(example), "--card", "a100-80gb-sxm")
    for w in data["workloads"]:
        assert w["headroom"] == 0.25
        for c in w["configs"]:
            assert c["usable_memory_gb"] == pytest.approx(c["card_memory_gb"] * 0.75)
            if w["kind"] == "inference":
                assert c["serving"]["tpot_ms"] > 0 and c["step"] is None
                continue
            step = c["step"]
            parts = [
                step[k]
                for k in (
                    "compute_s",
                    "recompute_s",
                    "tp_comm_s",
                    "cp_comm_s",
                    "ep_comm_s",
                    "pp_comm_s",
                    "bubble_s",
                    "dp_comm_s",
                    "optimizer_s",
                )
            ]
            assert sum(parts) == pytest.approx(step["step_s"])
            assert 0 < c["mfu"] <= c["hfu"] < 1


def test_explicit_layout_takes_every_parallelism(
    gpusolve: Callable[..., Any], files: tuple[Path, Path]
) -> None:
    data = _explicit_on_a100(
        gpusolve,
        files,
        "--gpus",
        "16",
        "--tp",
        "2",
        "--pp",
        "2",
        "--vp",
        "2",
        "--cp",
        "2",
        "--no-sp",
        "--recompute",
        "selective",
        "--sharding",
        "fsdp_hybrid",
    )
    c = data["workloads"][0]["configs"][0]
    assert (c["tp"], c["pp"], c["vp"], c["cp"], c["dp"]) == (2, 2, 2, 2, 2)
    assert c["sequence_parallel"] is False
    assert c["gradient_checkpointing"] == "selective" and c["sharding"] == "fsdp_hybrid"


def test_output_file(
    gpusolve: Callable[..., Any], files: tuple[Path, Path], tmp_path: Path
) -> None:
    reqs, cat = files
    out = tmp_path / "est.json"
    res = gpusolve(
        "estimate",
        str(reqs),
        "--no-default-catalog",
        "--catalog",
        str(cat),
        "--format",
        "json",
        "-o",
        str(out),
    )
    assert res.code == 0
    assert json.loads(out.read_text())["workloads"]


def test_unknown_preset_is_an_input_error_with_a_line(
    gpusolve: Callable[..., Any], tmp_path: Path, files: tuple[Path, Path]
) -> None:
    _, cat = files
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "workloads:\n  - name: x\n    kind: inference\n    model: {preset: llama-9-1t}\n"
        "    concurrency: 1\n"
    )
    res = gpusolve("estimate", str(bad), "--no-default-catalog", "--catalog", str(cat))
    assert res.code == 2
    assert "bad.yaml:4" in res.err and "known presets" in res.err


def test_unknown_card_and_bad_layout_are_usage_errors(
    gpusolve: Callable[..., Any], files: tuple[Path, Path]
) -> None:
    reqs, cat = files
    res = gpusolve(
        "estimate", str(reqs), "--no-default-catalog", "--catalog", str(cat), "--card", "nope"
    )
    assert res.code == 2 and "unknown card nope" in res.err
    res = gpusolve(
        "estimate",
        str(reqs),
        "--no-default-catalog",
        "--catalog",
        str(cat),
        "--gpus",
        "6",
        "--tp",
        "4",
    )
    assert res.code == 2 and "not a multiple" in res.err
