"""Launch files for a plan: per deployment, what to run it with, as the plan sized it.

Training layouts become Megatron-LM arguments (parallel sizes, batch, the model's whole
architecture, recomputation, the distributed optimizer for ZeRO-1 or Megatron-FSDP for
ZeRO-2/3, a checkpoint to start from for a fine-tune) or, for LoRA/QLoRA and for runs
without model parallelism that ZeRO-2/3 shards or that fine-tune a checkpoint, a DeepSpeed
config with the model's Hugging Face config and PEFT's adapter config; each with `torchrun`
per node, a Slurm batch file and the step time the plan expects. Serving layouts become
vLLM and SGLang command lines, one server per replica, wired through a router where the
plan disaggregates prefill and decode, and a `bench.sh` that runs the engine's own
benchmark at the plan's figures.

`launch_files(plan, reqs, catalog)` is a pure function of its inputs: call it per plan
(or per period of a schedule) and write the files where you like. Which engine releases
the flags were checked against is in FLAG_SOURCES.
"""

from __future__ import annotations

from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Deployment, Plan
from gpusolve.models.requirements import InferenceWorkload, Requirements
from gpusolve.render.launch.bench import bench_file
from gpusolve.render.launch.common import LaunchFile, architecture_of, vendor_of
from gpusolve.render.launch.megatron import global_batch
from gpusolve.render.launch.models import model_of
from gpusolve.render.launch.serving import serving_files
from gpusolve.render.launch.training import training_files

__all__ = ["FLAG_SOURCES", "LaunchFile", "launch_files"]

# The releases whose argument lists the generated flags were checked against (tests/data/
# launch/ holds the lists, extracted from these sources).
FLAG_SOURCES = {
    "megatron": "NVIDIA/Megatron-LM at d98e8a64 (2026-08-22): megatron/training/arguments.py "
    "and the config dataclasses it builds arguments from",
    "deepspeed": "deepspeedai/DeepSpeed at edaa7221 (2026-08-22): docs/_pages/config-json.md",
    "vllm": "vllm 0.34.0 (PyPI wheel): vllm/engine/arg_utils.py, "
    "vllm/entrypoints/common/cli_args.py, vllm/benchmarks/serve.py",
    "sglang": "sglang 0.5.23 (PyPI wheel): sglang/srt/arg_groups/fields/*.py, "
    "sglang/benchmark/serving.py",
    "torchrun": "torch.distributed.run's own parser (checked by the test suite)",
}


def launch_files(plan: Plan, reqs: Requirements, catalog: Catalog) -> list[LaunchFile]:
    """Every deployment's files, under a folder named after its workload."""
    workloads = {w.name: w for w in reqs.workloads}
    files: list[LaunchFile] = []
    for d in _foldered(plan.deployments):
        w = workloads[d.workload.split("/")[0]]
        if isinstance(w, InferenceWorkload) and d.share < 1:
            w = w.model_copy(update=w.demand_scaled(d.share))  # its bench sends its share
        vendor = vendor_of(d, catalog)
        model = model_of(w)
        if isinstance(w, InferenceWorkload):
            files += serving_files(d, w, model, vendor)
            files.append(bench_file(d, w, model))
        else:
            files += training_files(d, w, model, vendor, architecture_of(d, catalog))
    files.append(LaunchFile("README.md", _index(plan)))
    return files


def _foldered(deployments: list[Deployment]) -> list[Deployment]:
    """The deployments, each named by its folder: a split service's two parts get
    `<workload>/base` (owned) and `<workload>/burst` (rented)."""
    out = []
    for d in deployments:
        if d.share < 1:
            part = "base" if d.mode == "owned" else "burst"
            d = d.model_copy(update={"workload": f"{d.workload}/{part}"})
        out.append(d)
    return out


def _index(plan: Plan) -> str:
    out = [
        "# Launch files",
        "",
        "One folder per deployment of the plan, holding what to run it with as the plan",
        "sized it (model, parallel sizes, batch, sharding, memory fraction). Set the",
        "variables each script names (MASTER_ADDR, DATA_PATH, MEGATRON or TRAIN_SCRIPT,",
        "CHECKPOINT for a fine-tune, MODEL where the model has no public id, NODE_IP and",
        "RDMA_DEVICE for disaggregated serving) and run it on every node with `bash train.sh`",
        "(or `bash vllm.sh`, `bash sglang.sh`), or submit slurm.sbatch from its folder. Each",
        "serving folder has `bench.sh` (the engine's own benchmark at the plan's figures);",
        "each training folder's README.md gives the step time and tokens/s to expect.",
        "",
    ]
    for d in _foldered(plan.deployments):
        p = d.parallel
        out.append(
            f"- `{d.workload}/`: {d.servers} x {d.server or d.cloud_offer} ({d.gpus} x {d.card}); "
            f"TP{p.tp} PP{p.pp} CP{p.cp} EP{p.ep} DP{p.dp}, micro-batch {p.micro_batch}"
            + (f", global batch {global_batch(d)}" if d.time_to_train_h is not None else "")
        )
    out += ["", "Flags checked against:"]
    out += [f"- {k}: {v}" for k, v in FLAG_SOURCES.items()]
    return "\n".join(out) + "\n"
