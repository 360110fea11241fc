"""`plan --launch DIR`: launch files whose parallel sizes and batches are the plan's.

Checked against the engines' argument lists: torchrun's by its own parser (PyTorch is in
the test extra); Megatron-LM's, vLLM's and SGLang's flags and DeepSpeed's config keys by the
lists in tests/data/launch/ (each file names the release it was extracted from). The
engines' own parsers and validation run in tests/test_launch_engines.py where the engines
are installed; the model read back, the scripts and the wiring in
tests/test_launch_readback.py.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

import pytest
from tests.support.launched import DEEPSEEK, flags_of, folder_of, launch_all, listed
from tests.support.shipped import EXAMPLES, ROOT

LAUNCHED = [e.stem for e in EXAMPLES] + [DEEPSEEK[0].stem]
MEGATRON, VLLM, SGLANG = listed("megatron.flags"), listed("vllm.flags"), listed("sglang.flags")
DEEPSPEED_KEYS = listed("deepspeed.keys")
_flags = flags_of


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    return set()


def _torchrun(script: str) -> Any:
    """The torchrun options in train.sh, parsed by torch.distributed.run's own parser."""
    from torch.distributed.run import get_args_parser

    line = next(x for x in script.splitlines() if x.startswith("torchrun "))
    tokens = shlex.split(line)[1:]
    options = [t for t in tokens if t.startswith("--")]
    end = tokens.index(options[-1]) + 1
    return get_args_parser().parse_args([*tokens[:end], "train.py"])


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Path]]:
    """Every example planned once, with its JSON plan and its launch folder."""
    return {name: (x.plan, x.folder) for name, x in launch_all(tmp_path_factory).items()}


@pytest.mark.parametrize("example", LAUNCHED)
def test_launch_files_carry_the_plans_sizes(
    launched: dict[str, tuple[dict[str, Any], Path]], example: str
) -> None:
    plan, folder = launched[example]
    assert plan["deployments"], "every shipped example has a plan"
    assert (folder / "README.md").is_file()
    for d in plan["deployments"]:
        where = folder_of(folder, d)
        p = d["parallel"]
        if (where / "vllm.sh").exists():
            _check_serving(d, p, where)
        elif d.get("pools"):
            _check_pools(d, where)
        else:
            _check_training(d, p, where)


def _check_training(d: dict[str, Any], p: dict[str, Any], where: Path) -> None:
    script = (where / "train.sh").read_text()
    run = _torchrun(script)
    world = int(run.nnodes) * int(run.nproc_per_node)
    assert world == d["gpus"] and int(run.nnodes) == d["servers"]
    sbatch = (where / "slurm.sbatch").read_text()
    assert f"#SBATCH --nodes={d['servers']}" in sbatch
    # Slurm reads directives only before the first command.
    first_command = next(
        i for i, x in enumerate(sbatch.splitlines()[1:]) if x and not x.startswith("#")
    )
    assert all(x.startswith("#SBATCH") for x in sbatch.splitlines()[1 : first_command + 1])
    global_batch = p["micro_batch"] * p["grad_accum"] * p["dp"]
    if (where / "ds_config.json").exists():
        config = json.loads((where / "ds_config.json").read_text())
        assert _keys(config) <= DEEPSPEED_KEYS, _keys(config) - DEEPSPEED_KEYS
        assert config["train_micro_batch_size_per_gpu"] == p["micro_batch"]
        assert config["gradient_accumulation_steps"] == p["grad_accum"]
        assert config["train_batch_size"] == global_batch
        assert config["zero_optimization"]["stage"] == p["zero_stage"]
        tp = config.get("tensor_parallel", {}).get("autotp_size", 1)
        assert tp == p["tp"] and p["pp"] == p["cp"] == 1
        assert tp * p["dp"] == world
        return
    flags = _flags(shlex.split((where / "megatron.args").read_text()))
    assert set(flags) <= MEGATRON, set(flags) - MEGATRON
    sizes = {
        "tp": int(flags["--tensor-model-parallel-size"] or 0),
        "pp": int(flags["--pipeline-model-parallel-size"] or 0),
        "cp": int(flags["--context-parallel-size"] or 0),
    }
    assert sizes == {k: p[k] for k in sizes}
    dp = world // math.prod(sizes.values())
    assert math.prod(sizes.values()) * dp == world and dp == p["dp"]
    assert int(flags["--micro-batch-size"] or 0) == p["micro_batch"]
    assert int(flags["--global-batch-size"] or 0) == global_batch
    assert ("--use-distributed-optimizer" in flags) == (p["zero_stage"] >= 1)
    assert ("--sequence-parallel" in flags) == (p["sequence_parallel"] and p["tp"] > 1)


def _check_pools(d: dict[str, Any], where: Path) -> None:
    # Disaggregated serving: a prefill and a decode folder, each engine in its role, the two
    # pools' GPUs adding up to the deployment's.
    pools = d["pools"]
    total = 0
    for role in ("prefill", "decode"):
        tp, replicas = pools[f"{role}_tp"], pools[f"{role}_replicas"]
        total += tp * replicas
        for name, allowed in (("vllm.sh", VLLM), ("sglang.sh", SGLANG)):
            text = (where / role / name).read_text()
            lines = [x for x in text.splitlines() if "--port" in x]
            assert lines
            for line in lines:
                flags = _flags(shlex.split(line.rstrip(" &")))
                assert set(flags) <= allowed, (name, set(flags) - allowed)
                assert int(flags.get("--tensor-parallel-size") or flags.get("--tp-size") or 0) == tp
                assert "--kv-transfer-config" in flags or flags["--disaggregation-mode"] == role
    assert total == d["gpus"]


def _check_serving(d: dict[str, Any], p: dict[str, Any], where: Path) -> None:
    fraction = round(d["usable_memory_gb"] / d["card_memory_gb"], 2)
    for name, allowed in (("vllm.sh", VLLM), ("sglang.sh", SGLANG)):
        lines = [x for x in (where / name).read_text().splitlines() if "--port" in x]
        processes_per_node = len(lines)
        for line in lines:
            flags = _flags(shlex.split(line.rstrip(" &")))
            assert set(flags) <= allowed, (name, set(flags) - allowed)
            tp = int(flags.get("--tensor-parallel-size") or flags.get("--tp-size") or 0)
            pp = int(flags.get("--pipeline-parallel-size") or flags.get("--pp-size") or 0)
            seqs = flags.get("--max-num-seqs") or flags.get("--max-running-requests")
            memory = flags.get("--gpu-memory-utilization") or flags.get("--mem-fraction-static")
            # vLLM's attention DP runs DP ranks of TP 1, each capping its own sequences.
            per_rank = p.get("attention_dp") and name == "vllm.sh"
            assert (tp, pp) == ((1 if per_rank else p["tp"]), p["pp"])
            batch = -(-p["micro_batch"] // p["tp"]) if per_rank else p["micro_batch"]
            assert int(seqs or 0) == batch
            assert float(memory or 0) == pytest.approx(fraction)
        width = p["tp"] * p["pp"]
        if width <= d["gpus"] // d["servers"]:  # replicas within a node: one process each
            assert processes_per_node * width * d["servers"] == d["replicas"] * width
        assert d["replicas"] * width == d["gpus"]


def test_flag_lists_name_the_engines_core_flags() -> None:
    """The lists are the engines' (a list missing these would pass anything or nothing)."""
    assert {"--tensor-model-parallel-size", "--global-batch-size"} <= MEGATRON
    assert {"--tensor-parallel-size", "--max-num-seqs", "--gpu-memory-utilization"} <= VLLM
    assert {"--tp-size", "--max-running-requests", "--mem-fraction-static"} <= SGLANG
    assert {"train_micro_batch_size_per_gpu", "zero_optimization"} <= DEEPSPEED_KEYS
    assert "--tensor-parallel-degree" not in VLLM | SGLANG | MEGATRON


def test_uneven_layers_put_the_remainder_on_the_last_stage() -> None:
    """80 layers on 7 stages: six stages of ceil(80/7) = 12 and a last stage of 8, as the
    plan's memory assumed for the fullest stage."""
    from gpusolve.render.launch.megatron import _uneven_last_stage

    assert _uneven_last_stage(80, 7) == ["--decoder-last-pipeline-num-layers", "8"]
    assert _uneven_last_stage(80, 8) == []
    assert _uneven_last_stage(80, 1) == []


def test_launch_into_a_file_is_refused(gpusolve: Any, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    example = str(ROOT / "examples" / "finetune-7b-deadline.yaml")
    result = gpusolve("plan", "-q", example, "--launch", str(target))
    assert result.code == 2 and "--launch" in result.err
    assert target.read_text() == "x"
