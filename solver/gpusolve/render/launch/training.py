"""A training deployment's folder: the engine's files (megatron.args, or ds_config.json
with the model and adapter files), `train.sh` (torchrun on every node), `slurm.sbatch`,
and a README with the step time and tokens/s the plan expects, to compare with the first
steps' log."""

from __future__ import annotations

import json

from gpusolve.models.plan import Deployment
from gpusolve.models.requirements import FineTuneWorkload, Training
from gpusolve.render.launch.common import (
    LaunchFile,
    Vendor,
    gpus_per_node,
    one_flag_a_line,
    quoted,
    required,
    script,
)
from gpusolve.render.launch.deepspeed import (
    adapter_config,
    deepspeed_config,
    hf_config,
    quantization_config,
    uses_deepspeed,
)
from gpusolve.render.launch.megatron import (
    global_batch,
    megatron_args,
    needs_one_connection,
    uses_megatron_fsdp,
)
from gpusolve.render.launch.models import Model

MASTER_PORT = 29500


def torchrun_args(d: Deployment) -> list[str]:
    """torchrun's own options for one node of this deployment (rendezvous by c10d)."""
    return [
        f"--nnodes={d.servers}",
        f"--nproc-per-node={gpus_per_node(d)}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=${{MASTER_ADDR:?set MASTER_ADDR}}:{MASTER_PORT}",
        f"--rdzv-id={d.workload}",
    ]


def training_files(
    d: Deployment, w: Training, model: Model, vendor: Vendor, architecture: str | None
) -> list[LaunchFile]:
    folder = d.workload
    run = " ".join(torchrun_args(d))
    env: list[str] = []
    if uses_deepspeed(d, w):
        files, command, engine = _deepspeed(d, w, model, run)
    else:
        files, command, engine = _megatron(d, w, model, run)
        if uses_megatron_fsdp(d):
            env.append("unset CUDA_DEVICE_MAX_CONNECTIONS  # Megatron-FSDP asserts it is not 1")
        elif needs_one_connection(d, architecture):
            # validate_args asserts it with TP/CP > 1 before Blackwell, as Megatron-LM's own
            # example scripts export it (examples/gpt3/train_gpt3_175b_distributed.sh).
            env.append("export CUDA_DEVICE_MAX_CONNECTIONS=1")
    train = script(
        [
            f"# {d.workload}: {engine} on {d.servers} node(s) x {gpus_per_node(d)} GPUs "
            f"({d.gpus} x {d.card}), as the plan sized it.",
            "# Run once per node: NODE_RANK is unused (c10d rendezvous at MASTER_ADDR).",
            *([f"# {d.card}: {vendor.note}."] if vendor.note else []),
            'cd "$(dirname "${BASH_SOURCE[0]}")"',
            *env,
            *command,
        ]
    )
    sbatch = script(
        [
            "# Submit from this folder (cd into it, then sbatch slurm.sbatch): Slurm runs a",
            "# spooled copy of this file, so the folder is the submit directory, not $0's.",
            'cd "${SLURM_SUBMIT_DIR:?submit with sbatch}"',
            "if [ ! -f train.sh ]; then",
            '  echo "slurm.sbatch: no train.sh in $PWD; submit from the launch folder" >&2',
            "  exit 1",
            "fi",
            'export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
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
        *(LaunchFile(f"{folder}/{path}", text) for path, text in files),
        LaunchFile(f"{folder}/train.sh", train),
        LaunchFile(f"{folder}/slurm.sbatch", sbatch),
        LaunchFile(f"{folder}/README.md", _readme(d, w, model, engine)),
    ]


def _megatron(
    d: Deployment, w: Training, model: Model, run: str
) -> tuple[list[tuple[str, str]], list[str], str]:
    args = megatron_args(d, w, model)
    program = required("MEGATRON", "set MEGATRON to your Megatron-LM checkout") + "/pretrain_gpt.py"
    tokenizer = (
        f'"${{TOKENIZER:-{model.checkpoint}}}"'
        if model.checkpoint
        else required("TOKENIZER", "set TOKENIZER to the Hugging Face tokenizer of the data")
    )
    if w.kind == "pretrain":
        checkpoints = ['--save "${SAVE:-checkpoints}" --load "${SAVE:-checkpoints}"']
    else:
        hint = "set CHECKPOINT to the Megatron checkpoint converted from " + (
            model.checkpoint or "your model"
        )
        checkpoints = [f'--load {required("CHECKPOINT", hint)} --save "${{SAVE:-checkpoints}}"']
    command = [
        "# megatron.args holds shell words (quoted as bash reads them).",
        'eval "MEGATRON_ARGS=($(< megatron.args))"',
        f'torchrun {run} {program} "${{MEGATRON_ARGS[@]}}" '
        f"--data-path {required('DATA_PATH', 'set DATA_PATH')} "
        f"--tokenizer-type HuggingFaceTokenizer --tokenizer-model {tokenizer} "
        + " ".join(checkpoints),
    ]
    engine = "Megatron-LM" + (
        f" (Megatron-FSDP, ZeRO-{d.parallel.zero_stage})" if uses_megatron_fsdp(d) else ""
    )
    return [("megatron.args", one_flag_a_line(args))], command, engine


def _deepspeed(
    d: Deployment, w: Training, model: Model, run: str
) -> tuple[list[tuple[str, str]], list[str], str]:
    p = d.parallel
    files = [("ds_config.json", _json(deepspeed_config(d, w)))]
    if model.named:
        files.append(("model/config.json", _json(hf_config(model, w.seq_len))))
    trainer = ["--deepspeed", "ds_config.json"]
    if w.kind == "pretrain":
        trainer += ["--config_name", "model"]
    else:
        trainer += ["--model_name_or_path", "@MODEL@"]  # the variable below, unquoted
    trainer += [
        "--per_device_train_batch_size", str(p.micro_batch),
        "--gradient_accumulation_steps", str(p.grad_accum),
        "--output_dir", "checkpoints",
    ]  # fmt: skip
    if w.precision == "fp16":
        trainer.append("--fp16")
    elif w.precision != "fp32":
        trainer.append("--bf16")
    if p.gradient_checkpointing != "none":
        trainer.append("--gradient_checkpointing")
    if isinstance(w, FineTuneWorkload):
        files.append(("lora/adapter_config.json", _json(adapter_config(w, model))))
        if w.kind == "qlora":
            files.append(("lora/quantization_config.json", _json(quantization_config())))
    checkpoint = model.checkpoint
    source = (
        f'"${{MODEL:-{checkpoint}}}"'
        if checkpoint
        else required("MODEL", "set MODEL to the checkpoint path or Hugging Face id")
    )
    text = quoted(trainer).replace("@MODEL@", source)
    program = required("TRAIN_SCRIPT", "set TRAIN_SCRIPT to a Hugging Face Trainer script")
    command = [
        "# TRAIN_SCRIPT takes Hugging Face TrainingArguments (as transformers' run_clm.py);",
        "# LoRA: it builds the adapter from lora/ (peft.LoraConfig.from_pretrained).",
        f"torchrun {run} {program} {text}",
    ]
    return files, command, f"DeepSpeed (ZeRO-{p.zero_stage})"


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


def step_time_s(d: Deployment, seq_len: int) -> float | None:
    """Seconds per optimizer step at the plan's tokens/s: global batch x sequence / rate."""
    if d.throughput <= 0:
        return None
    return global_batch(d) * seq_len / d.throughput


def _readme(d: Deployment, w: Training, model: Model, engine: str) -> str:
    p = d.parallel
    step = step_time_s(d, w.seq_len)
    per_gpu = d.throughput / d.gpus if d.gpus else 0.0
    out = [
        f"# {d.workload}",
        "",
        f"{engine} on {d.servers} node(s) x {gpus_per_node(d)} GPUs ({d.gpus} x {d.card}): "
        f"TP{p.tp} PP{p.pp} VP{p.vp} CP{p.cp} EP{p.ep} DP{p.dp}, ZeRO-{p.zero_stage}, "
        f"recomputation {p.gradient_checkpointing}, micro-batch {p.micro_batch} x "
        f"{p.grad_accum} accumulation = global batch {global_batch(d)} of {w.seq_len} tokens.",
        "",
        "## What the plan expects (compare with the first steps' log)",
        "",
        f"- tokens/s: {d.throughput:,.0f} in all, {per_gpu:,.0f} per GPU",
    ]
    if step is not None:
        out.append(f"- step time: {step:,.2f} s per optimizer step")
    if d.mfu is not None:
        out.append(f"- MFU: {d.mfu:.1%}")
    if d.time_to_train_h is not None:
        out.append(f"- one run: {d.time_to_train_h:,.1f} h")
    out += [
        "",
        "Steps clearly slower than this (after the first few, which warm up) mean the",
        "hardware does not deliver what the plan bought: check the interconnect and the",
        "engine build before scaling out.",
        "",
        f"Model: {_model_line(model, w.kind == 'pretrain')}.",
    ]
    if w.kind != "pretrain":
        out.append(f"Starts from the checkpoint {model.checkpoint or 'named by MODEL/CHECKPOINT'}.")
    return "\n".join(out) + "\n"


def _model_line(model: Model, from_scratch: bool) -> str:
    arch = model.arch
    shape = f"{arch.layers} layers, hidden {arch.hidden}, {arch.params / 1e9:,.1f} B parameters"
    if arch.coarse and from_scratch:
        return shape + " (a plausible shape of the given size, invented: give the shape)"
    if arch.coarse:
        return f"{arch.params / 1e9:,.1f} B parameters, size only: the checkpoint gives its shape"
    return f"{arch.name or 'as given'}, {shape}; {model.family.source}"
