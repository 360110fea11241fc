"""Launch files for a plan: per deployment, what to run it with, as the plan sized it.

Training layouts become Megatron-LM arguments (tensor, pipeline, virtual, context, expert
and sequence parallelism, micro/global batch, recomputation, the distributed optimizer:
ZeRO-1) or, for ZeRO-2/3 sharding without model parallelism, a DeepSpeed config (ZeRO
stage, micro-batch, accumulation), each with a `torchrun` launcher per node and a Slurm
batch file for the node count. Serving layouts become vLLM and SGLang command lines
(tensor/pipeline size, concurrent sequences, model length, quantization, KV-cache dtype,
and the GPU memory fraction the plan's headroom leaves), one server process per replica.

Every figure comes from the plan's deployment and the workload as written; nothing is
re-derived. Which engine releases the flags were checked against is in FLAG_SOURCES (the
test suite holds their argument lists).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from gpusolve.estimate.presets import find_preset
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Deployment, Plan
from gpusolve.models.requirements import (
    InferenceWorkload,
    Requirements,
    Workload,
)

# The releases whose argument lists the generated flags were checked against (tests/data/
# launch/ holds the lists, extracted from these sources).
FLAG_SOURCES = {
    "megatron": "NVIDIA/Megatron-LM at d98e8a64 (2026-08-22): megatron/training/arguments.py "
    "and the config dataclasses it builds arguments from",
    "deepspeed": "deepspeedai/DeepSpeed at edaa7221 (2026-08-22): docs/_pages/config-json.md",
    "vllm": "vllm 0.34.0 (PyPI wheel): vllm/engine/arg_utils.py, "
    "vllm/entrypoints/common/cli_args.py",
    "sglang": "sglang 0.5.23 (PyPI wheel): sglang/srt/arg_groups/fields/*.py",
    "torchrun": "torch.distributed.run's own parser (checked by the test suite)",
}

MASTER_PORT = 29500
FIRST_SERVE_PORT = 8000
_HF = re.compile(r"huggingface\.co/([\w.-]+/[\w.-]+)")


@dataclass(frozen=True)
class Vendor:
    """How one vendor's accelerators are picked per process and which engine builds run
    them. The variables are the vendors' own: CUDA; ROCm's HIP_VISIBLE_DEVICES (AMD, and
    Hygon's DTK, a ROCm port); vllm-ascend's and CANN's ASCEND_RT_VISIBLE_DEVICES;
    Cambricon's MLU_VISIBLE_DEVICES (CNToolkit); Kunlunxin's XPU_VISIBLE_DEVICES (XRE)."""

    visible_devices: str
    note: str = ""
    sglang_device: str | None = None  # SGLang's --device where it is not CUDA


VENDORS = {
    "nvidia": Vendor("CUDA_VISIBLE_DEVICES"),
    "amd": Vendor("HIP_VISIBLE_DEVICES", "ROCm builds of vLLM, SGLang and PyTorch"),
    "hygon": Vendor("HIP_VISIBLE_DEVICES", "Hygon DTK builds of PyTorch, vLLM and DeepSpeed"),
    "huawei": Vendor(
        "ASCEND_RT_VISIBLE_DEVICES",
        "torch_npu with CANN; vLLM through the vllm-ascend plugin; Megatron-LM through "
        "MindSpeed (same arguments); SGLang with --device npu",
        sglang_device="npu",
    ),
    "cambricon": Vendor("MLU_VISIBLE_DEVICES", "Cambricon's torch_mlu and its vLLM port"),
    "kunlunxin": Vendor("XPU_VISIBLE_DEVICES", "Kunlunxin's XPU builds of PyTorch and vLLM"),
}
OTHER_VENDOR = Vendor("CUDA_VISIBLE_DEVICES", "the vendor's own builds of the engines")


def vendor_of(d: Deployment, catalog: Catalog) -> Vendor:
    card = catalog.cards.get(d.card)
    return VENDORS.get(card.vendor.lower(), OTHER_VENDOR) if card else OTHER_VENDOR


@dataclass(frozen=True)
class LaunchFile:
    path: str  # relative to the launch folder
    text: str


def launch_files(plan: Plan, reqs: Requirements, catalog: Catalog) -> list[LaunchFile]:
    """Every deployment's files, under a folder named after its workload."""
    workloads = {w.name: w for w in reqs.workloads}
    files: list[LaunchFile] = []
    for d in plan.deployments:
        w = workloads[d.workload]
        vendor = vendor_of(d, catalog)
        if isinstance(w, InferenceWorkload):
            files += _serving(d, w, vendor)
        else:
            files += _training(d, w, vendor)
    files.append(LaunchFile("README.md", _index(plan)))
    return files


def model_id(w: Workload) -> str | None:
    """The Hugging Face repository of the workload's preset, when its source names one."""
    if w.model.preset is None:
        return None
    preset = find_preset(w.model.preset)
    found = _HF.search(preset.source) if preset else None
    return found.group(1) if found else None


def _model_ref(w: Workload) -> str:
    return model_id(w) or "${MODEL:?set MODEL to the model's path or Hugging Face id}"


def gpus_per_node(d: Deployment) -> int:
    if d.pools is not None:
        return d.pools.gpus_per_node
    return max(1, d.gpus // max(1, d.servers))


# ----------------------------------------------------------------------------- training


def uses_deepspeed(d: Deployment, w: Workload) -> bool:
    """LoRA/QLoRA (adapters through PEFT in the user's script), and ZeRO-2/3 without model
    parallelism: DeepSpeed shards as the plan assumed. Anything else with tensor, pipeline,
    context or expert parallelism goes to Megatron-LM."""
    p = d.parallel
    if w.kind in ("lora", "qlora"):
        return True
    return p.zero_stage >= 2 and p.tp == p.pp == p.cp == p.ep == 1


def megatron_args(d: Deployment, w: Workload) -> list[str]:
    """Megatron-LM's pretrain_gpt.py arguments for this deployment, one flag per item
    (values follow their flag)."""
    from gpusolve.estimate.shapes import resolve_arch

    p = d.parallel
    arch = resolve_arch(w.model)
    seq = w.seq_len
    args = [
        "--tensor-model-parallel-size", str(p.tp),
        "--pipeline-model-parallel-size", str(p.pp),
        "--context-parallel-size", str(p.cp),
        "--expert-model-parallel-size", str(p.ep),
        "--micro-batch-size", str(p.micro_batch),
        "--global-batch-size", str(global_batch(d)),
        "--seq-length", str(seq),
        "--max-position-embeddings", str(seq),
        "--num-layers", str(arch.layers),
        "--hidden-size", str(arch.hidden),
        "--ffn-hidden-size", str(arch.ffn),
        "--num-attention-heads", str(arch.heads),
        "--kv-channels", str(arch.head_dim),
    ]  # fmt: skip
    if p.sequence_parallel and p.tp > 1:
        args.append("--sequence-parallel")
    args += _uneven_last_stage(arch.layers, p.pp)
    if p.vp > 1:
        layers_per_rank = -(-arch.layers // p.pp)
        args += ["--num-layers-per-virtual-pipeline-stage", str(max(1, layers_per_rank // p.vp))]
    if arch.kv_heads != arch.heads:
        args += ["--group-query-attention", "--num-query-groups", str(arch.kv_heads)]
    if arch.gated_ffn:
        args.append("--swiglu")
    if arch.experts > 1:
        args += ["--num-experts", str(arch.experts), "--moe-router-topk", str(arch.active_experts)]
    if p.zero_stage >= 1:
        args.append("--use-distributed-optimizer")
    args += _recompute(p.gradient_checkpointing)
    args += _megatron_precision(w.precision)
    tokens = None if isinstance(w, InferenceWorkload) else w.tokens
    if tokens:
        args += ["--train-samples", str(max(1, int(tokens // seq)))]
    return args


def _uneven_last_stage(layers: int, pp: int) -> list[str]:
    """Layers that do not divide by PP: every stage but the last holds ceil(layers / pp), as
    the plan's memory assumed for the fullest stage, and the last stage the rest."""
    if pp <= 1 or layers % pp == 0:
        return []
    per_stage = -(-layers // pp)
    last = layers - per_stage * (pp - 1)
    if last < 1:  # e.g. 10 layers on 6 stages: no split with the fullest at ceil(10/6)
        return []
    return ["--decoder-last-pipeline-num-layers", str(last)]


def global_batch(d: Deployment) -> int:
    p = d.parallel
    return p.micro_batch * p.grad_accum * p.dp


def _recompute(checkpointing: str) -> list[str]:
    if checkpointing == "full":
        return [
            "--recompute-granularity", "full",
            "--recompute-method", "uniform",
            "--recompute-num-layers", "1",
        ]  # fmt: skip
    if checkpointing == "selective":
        return ["--recompute-granularity", "selective"]
    return []


def _megatron_precision(precision: str) -> list[str]:
    if precision == "fp16":
        return ["--fp16"]
    if precision == "fp8":  # FP8 GEMMs through Transformer Engine, BF16 elsewhere
        return ["--bf16", "--fp8-format", "hybrid"]
    if precision in ("bf16", "int8", "int4", "nf4"):
        return ["--bf16"]
    return []  # fp32


def deepspeed_config(d: Deployment, w: Workload) -> dict[str, object]:
    p = d.parallel
    config: dict[str, object] = {
        "train_micro_batch_size_per_gpu": p.micro_batch,
        "gradient_accumulation_steps": p.grad_accum,
        "train_batch_size": global_batch(d),
        "zero_optimization": {"stage": p.zero_stage, "overlap_comm": True},
        "gradient_clipping": 1.0,
    }
    if p.tp > 1:  # DeepSpeed's automatic tensor parallelism
        config["tensor_parallel"] = {"autotp_size": p.tp}
    if w.precision == "fp16":
        config["fp16"] = {"enabled": True}
    elif w.precision != "fp32":
        config["bf16"] = {"enabled": True}
    return config


def torchrun_args(d: Deployment) -> list[str]:
    """torchrun's own options for one node of this deployment (rendezvous by c10d)."""
    return [
        f"--nnodes={d.servers}",
        f"--nproc-per-node={gpus_per_node(d)}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=${{MASTER_ADDR:?set MASTER_ADDR}}:{MASTER_PORT}",
        f"--rdzv-id={d.workload}",
    ]


def _training(d: Deployment, w: Workload, vendor: Vendor) -> list[LaunchFile]:
    folder = d.workload
    run = " ".join(torchrun_args(d))
    if uses_deepspeed(d, w):
        config = json.dumps(deepspeed_config(d, w), indent=2) + "\n"
        program = '"${TRAIN_SCRIPT:?set TRAIN_SCRIPT to your DeepSpeed training script}"'
        command = f"torchrun {run} {program} --deepspeed ds_config.json"
        engine_files = [LaunchFile(f"{folder}/ds_config.json", config)]
        engine = f"DeepSpeed (ZeRO-{d.parallel.zero_stage})"
    else:
        args = megatron_args(d, w)
        engine_files = [LaunchFile(f"{folder}/megatron.args", _one_flag_a_line(args))]
        program = '"${MEGATRON:?set MEGATRON to your Megatron-LM checkout}/pretrain_gpt.py"'
        command = (
            f"torchrun {run} {program} $(cat megatron.args) "
            '--data-path "${DATA_PATH:?set DATA_PATH}" '
            '--tokenizer-type HuggingFaceTokenizer --tokenizer-model "${TOKENIZER:-'
            + (model_id(w) or "set TOKENIZER")
            + '}"'
        )
        engine = "Megatron-LM"
    script = _script(
        [
            f"# {d.workload}: {engine} on {d.servers} node(s) x {gpus_per_node(d)} GPUs "
            f"({d.gpus} x {d.card}), as the plan sized it.",
            "# Run once per node: NODE_RANK is unused (c10d rendezvous at MASTER_ADDR).",
            *([f"# {d.card}: {vendor.note}."] if vendor.note else []),
            'cd "$(dirname "$0")"',
            command,
        ]
    )
    sbatch = _script(
        [
            'export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
            'cd "$(dirname "$0")"',
            "srun bash train.sh",
        ],
        directives=[
            f"#SBATCH --job-name={d.workload}",
            f"#SBATCH --nodes={d.servers}",
            "#SBATCH --ntasks-per-node=1",
            f"#SBATCH --gpus-per-node={gpus_per_node(d)}",
            "#SBATCH --exclusive",
        ],
    )
    return [
        *engine_files,
        LaunchFile(f"{folder}/train.sh", script),
        LaunchFile(f"{folder}/slurm.sbatch", sbatch),
    ]


# ----------------------------------------------------------------------------- serving


def serving_max_len(w: InferenceWorkload) -> int:
    if w.context_len:
        return w.context_len
    if w.prompt_tokens and w.output_tokens:
        return w.prompt_tokens + w.output_tokens
    return w.seq_len


def memory_fraction(d: Deployment) -> float:
    """The share of each GPU's memory the engine may take: what the plan's headroom leaves."""
    return round(d.usable_memory_gb / d.card_memory_gb, 2)


def replicas_per_node(d: Deployment) -> int:
    per_replica = d.parallel.tp * d.parallel.pp
    return max(1, gpus_per_node(d) // per_replica)


@dataclass(frozen=True)
class EngineFlags:
    """One serving engine's names for the same settings."""

    tp: str
    pp: str
    seqs: str
    max_len: str
    memory: str
    kv_fp8: str  # its name for an FP8 (e4m3) KV cache


VLLM = EngineFlags(
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--max-num-seqs",
    "--max-model-len",
    "--gpu-memory-utilization",
    "fp8",
)
SGLANG = EngineFlags(
    "--tp-size",
    "--pp-size",
    "--max-running-requests",
    "--context-length",
    "--mem-fraction-static",
    "fp8_e4m3",
)
QUANTIZATION = {"fp8": "fp8", "int4": "awq", "nf4": "bitsandbytes"}


def serve_args(engine: EngineFlags, d: Deployment, w: InferenceWorkload, port: int) -> list[str]:
    p = d.parallel
    args = [
        engine.tp, str(p.tp),
        engine.pp, str(p.pp),
        engine.seqs, str(p.micro_batch),
        engine.max_len, str(serving_max_len(w)),
        engine.memory, f"{memory_fraction(d):g}",
        "--dtype", "float16" if w.precision == "fp16" else "bfloat16",
        "--port", str(port),
    ]  # fmt: skip
    quant = QUANTIZATION.get(w.precision)
    if quant:
        args += ["--quantization", quant]
    if w.kv_cache_precision == "fp8":
        args += ["--kv-cache-dtype", engine.kv_fp8]
    return args


def vllm_args(d: Deployment, w: InferenceWorkload, port: int) -> list[str]:
    return serve_args(VLLM, d, w, port)


def sglang_args(d: Deployment, w: InferenceWorkload, port: int, device: str | None) -> list[str]:
    args = serve_args(SGLANG, d, w, port)
    return [*args, "--device", device] if device is not None else args


# Disaggregated serving: each engine's own prefill/decode roles, the KV cache over NIXL
# (vLLM docs, "Disaggregated Prefilling": NixlConnector with kv_role kv_both on both sides;
# SGLang docs, "PD Disaggregation": --disaggregation-mode prefill|decode).
VLLM_KV_TRANSFER = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def _pool(d: Deployment, role: str) -> Deployment:
    """The deployment as one pool of a disaggregated one: its TP, its replicas, its GPUs."""
    pools = d.pools
    assert pools is not None
    tp, replicas = (
        (pools.prefill_tp, pools.prefill_replicas)
        if role == "prefill"
        else (pools.decode_tp, pools.decode_replicas)
    )
    gpus = tp * replicas
    servers = 1 if pools.one_server else -(-gpus // pools.gpus_per_node)
    parallel = d.parallel.model_copy(update={"tp": tp, "pp": 1})
    return d.model_copy(
        update={"parallel": parallel, "replicas": replicas, "gpus": gpus, "servers": servers}
    )


def _disaggregated(d: Deployment, w: InferenceWorkload, vendor: Vendor) -> list[LaunchFile]:
    pools = d.pools
    assert pools is not None
    files: list[LaunchFile] = []
    for role in ("prefill", "decode"):
        pool = _pool(d, role)
        vllm_role = ["--kv-transfer-config", VLLM_KV_TRANSFER]
        sglang_role = ["--disaggregation-mode", role]
        # Sharing one server, the prefill pool takes the GPUs after the decode pool's.
        first = pools.decode_tp * pools.decode_replicas if pools.one_server else 0
        first = first if role == "prefill" else 0
        for f in _serving(pool, w, vendor, (vllm_role, sglang_role), first):
            files.append(LaunchFile(f"{d.workload}/{role}/{f.path.split('/')[-1]}", f.text))
    return files


def _serving(
    d: Deployment,
    w: InferenceWorkload,
    vendor: Vendor,
    role: tuple[list[str], list[str]] | None = None,
    first_gpu: int = 0,
) -> list[LaunchFile]:
    if d.pools is not None and role is None:
        return _disaggregated(d, w, vendor)
    folder = d.workload
    per_node = replicas_per_node(d)
    width = d.parallel.tp * d.parallel.pp
    spans_nodes = width > gpus_per_node(d)
    model = _model_ref(w)
    head = [
        f"# {d.workload}: {d.replicas} replica(s) of TP{d.parallel.tp} PP{d.parallel.pp}, "
        f"{d.parallel.micro_batch} concurrent sequences each, on {d.servers} node(s) x "
        f"{gpus_per_node(d)} GPUs ({d.gpus} x {d.card}), as the plan sized it.",
        f"# GPU memory fraction {memory_fraction(d):g}: the plan's {d.headroom:.0%} headroom.",
        *([f"# {d.card}: {vendor.note}."] if vendor.note else []),
    ]
    if spans_nodes:
        head.append(
            "# One replica spans nodes (pipeline across servers): start the engine's "
            "multi-node mode (vLLM: a Ray cluster; SGLang: --nnodes/--node-rank) per its docs."
        )
    else:
        head.append(f"# Run on each node: {per_node} server process(es), one per replica.")
    vllm_lines, sglang_lines = list(head), list(head)
    for i in range(per_node if not spans_nodes else 1):
        port = FIRST_SERVE_PORT + i
        start = first_gpu + i * width
        devices = ",".join(str(g) for g in range(start, start + width))
        env = "" if spans_nodes else f"{vendor.visible_devices}={devices} "
        vllm_extra, sglang_extra = role or ([], [])
        vllm_lines.append(
            f"{env}vllm serve {model} {_joined(vllm_args(d, w, port) + vllm_extra)} &"
        )
        sglang_lines.append(
            f"{env}python -m sglang.launch_server --model-path {model} "
            f"{_joined(sglang_args(d, w, port, vendor.sglang_device) + sglang_extra)} &"
        )
    for lines in (vllm_lines, sglang_lines):
        lines.append("wait")
    return [
        LaunchFile(f"{folder}/vllm.sh", _script(vllm_lines)),
        LaunchFile(f"{folder}/sglang.sh", _script(sglang_lines)),
    ]


# ----------------------------------------------------------------------------- text


def _joined(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def _one_flag_a_line(args: list[str]) -> str:
    lines: list[str] = []
    for a in args:
        if a.startswith("--") or not lines:
            lines.append(a)
        else:
            lines[-1] += " " + shlex.quote(a)
    return "\n".join(lines) + "\n"


def _script(lines: list[str], directives: list[str] | None = None) -> str:
    """A bash script; Slurm reads #SBATCH lines only before the first command."""
    head = ["#!/usr/bin/env bash", *(directives or []), "set -euo pipefail"]
    return "\n".join([*head, *lines]) + "\n"


def _index(plan: Plan) -> str:
    out = [
        "# Launch files",
        "",
        "One folder per deployment of the plan, holding what to run it with as the plan",
        "sized it (parallel sizes, batch, memory fraction). Set the variables each script",
        "names (MASTER_ADDR, DATA_PATH, MEGATRON or TRAIN_SCRIPT, MODEL where the model has",
        "no public id) and run it on every node with `bash train.sh` (or `bash vllm.sh`,",
        "`bash sglang.sh`), or submit slurm.sbatch.",
        "",
    ]
    for d in plan.deployments:
        p = d.parallel
        out.append(
            f"- `{d.workload}/`: {d.servers} x {d.server or d.cloud_offer} ({d.gpus} x {d.card}); "
            f"TP{p.tp} PP{p.pp} CP{p.cp} EP{p.ep} DP{p.dp}, micro-batch {p.micro_batch}"
            + (f", global batch {global_batch(d)}" if d.time_to_train_h is not None else "")
        )
    out += ["", "Flags checked against:"]
    out += [f"- {k}: {v}" for k, v in FLAG_SOURCES.items()]
    return "\n".join(out) + "\n"
