"""Launch files read back as a platform engineer would run them: the model they build has
the plan's parameter count, the scripts parse and run from the right folder, the engines'
environment is set, disaggregated serving is wired, and bench.sh carries the plan's figures.

The parameter counts here come from the written flags and configs by formulas of this file
(Megatron-LM's GPTModel and MLA layer shapes; Hugging Face's model classes), not from
gpusolve's own counting, so a missing or wrong flag shows as a count off the plan's model.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.support.launched import DEEPSEEK, Launched, flag_values, launch_all
from tests.support.shipped import EXAMPLES

NAMES = [e.stem for e in EXAMPLES] + [DEEPSEEK[0].stem]


@pytest.fixture(scope="module")
def launched_all(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Launched]:
    return launch_all(tmp_path_factory)


# vocab_size of each tokenizer's config.json (huggingface.co/<id>/blob/main/config.json;
# DeepSeek-V3-Base: its config.json, 129280).
TOKENIZER_VOCAB = {
    "meta-llama/Llama-2-7b-hf": 32000,
    "meta-llama/Llama-2-13b-hf": 32000,
    "meta-llama/Llama-2-70b-hf": 32000,
    "meta-llama/Meta-Llama-3-8B": 128256,
    "meta-llama/Llama-3.1-70B": 128256,
    "deepseek-ai/DeepSeek-V3-Base": 129280,
}
# Parameters of the served checkpoints, in billions, as their model cards state them.
SERVED_PARAMS_B = {
    "meta-llama/Llama-3.1-70B-Instruct": 70.6,
    "meta-llama/Meta-Llama-3-8B-Instruct": 8.03,
    "meta-llama/Llama-2-13b-chat-hf": 13.0,
    "meta-llama/Llama-2-70b-chat-hf": 69.0,
    "Qwen/Qwen2.5-72B-Instruct": 72.7,
    "Qwen/Qwen2.5-7B-Instruct": 7.61,
    "meta-llama/Llama-2-7b-hf": 6.74,
}


def _plan_params(name: str, x: Launched) -> float:
    """The parameter count of the model the plan sized (its estimate's architecture)."""
    from gpusolve.estimate.shapes import resolve_arch
    from gpusolve.models.requirements import make_workload

    return resolve_arch(make_workload(x.workload(name)).model).params


def _deployments(kind: str) -> list[tuple[str, str]]:
    return [(n, kind) for n in NAMES]


def _one(args: dict[str, list[str]], flag: str, default: int = 0) -> int:
    return int(args[flag][0]) if flag in args else default


def megatron_params(args: dict[str, list[str]], vocab: int) -> float:
    """GPTModel's weights from its arguments: embedding (+ output layer when untied, +
    learned positions), per layer two norms, attention (GQA or MLA) and an MLP (dense, or
    routed experts + shared experts + router), and the final norm."""
    h, layers = _one(args, "--hidden-size"), _one(args, "--num-layers")
    heads = _one(args, "--num-attention-heads")
    kvc = _one(args, "--kv-channels", h // heads)
    glu = 3 if "--swiglu" in args else 2
    if "--multi-latent-attention" in args:
        ql, kvl = _one(args, "--q-lora-rank"), _one(args, "--kv-lora-rank")
        qk, rope, v = (
            _one(args, f) for f in ("--qk-head-dim", "--qk-pos-emb-head-dim", "--v-head-dim")
        )
        attn = h * ql + ql * heads * (qk + rope) + h * (kvl + rope) + kvl * heads * (qk + v)
        attn += heads * v * h + ql + kvl  # the two latent norms
    else:
        groups = (
            _one(args, "--num-query-groups", heads) if "--group-query-attention" in args else heads
        )
        attn = h * heads * kvc * 2 + h * groups * kvc * 2
    dense = glu * h * _one(args, "--ffn-hidden-size")
    experts = _one(args, "--num-experts")
    if experts:
        pattern = args.get("--moe-layer-freq", ["1"])[0]
        moe_flags = eval(pattern) if "[" in pattern else [1] * layers
        moe = sum(moe_flags)
        expert = glu * h * _one(args, "--moe-ffn-hidden-size")
        shared = glu * h * _one(args, "--moe-shared-expert-intermediate-size")
        mlp = (layers - moe) * dense + moe * (experts * expert + shared + h * experts)
    else:
        mlp = layers * dense
    embed = vocab * h * (2 if "--untie-embeddings-and-output-weights" in args else 1)
    if args.get("--position-embedding-type", ["learned_absolute"])[0] == "learned_absolute":
        embed += _one(args, "--max-position-embeddings") * h
    return float(layers * (attn + 2 * h) + mlp + embed + h)


def hf_params(c: dict[str, Any]) -> float:
    """A Hugging Face config.json's weights, by its model class's layer shapes."""
    kind = c["model_type"]
    if kind in ("gpt2", "opt"):
        h = c.get("n_embd", c.get("hidden_size"))
        layers = c.get("n_layer", c.get("num_hidden_layers"))
        ffn = c.get("n_inner", c.get("ffn_dim"))
        positions = c.get("n_positions", c.get("max_position_embeddings"))
        per = 4 * h * h + 2 * h * ffn + 4 * h
        return float(layers * per + (c["vocab_size"] + positions) * h + h)
    h, layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads = c["num_attention_heads"]
    tied = c.get("tie_word_embeddings", False)
    embed = vocab * h * (1 if tied else 2)
    if kind == "gpt_neox":
        per = 4 * h * h + 2 * h * c["intermediate_size"] + 4 * h
        return float(layers * per + embed + h)
    hd = c.get("head_dim") or h // heads
    kv = c.get("num_key_value_heads", heads)
    if kind == "deepseek_v3":
        ql, kvl = c["q_lora_rank"], c["kv_lora_rank"]
        nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        attn = h * ql + ql * heads * (nope + rope) + h * (kvl + rope)
        attn += kvl * heads * (nope + v) + heads * v * h + ql + kvl
        dense_layers, e = c["first_k_dense_replace"], c["n_routed_experts"]
        expert = 3 * h * c["moe_intermediate_size"]
        moe = (layers - dense_layers) * (expert * (e + c["n_shared_experts"]) + h * e)
        mlp = dense_layers * 3 * h * c["intermediate_size"] + moe
        return float(layers * (attn + 2 * h) + mlp + embed + h)
    attn = 2 * h * heads * hd + 2 * h * kv * hd
    mlp = 3 * h * c["intermediate_size"]
    if kind == "mixtral":
        mlp = c["num_local_experts"] * mlp + h * c["num_local_experts"]
    return float(layers * (attn + mlp + 2 * h) + embed + h)


@pytest.mark.parametrize("example", NAMES)
def test_launched_models_have_the_plans_parameter_count(
    launched_all: dict[str, Launched], example: str
) -> None:
    """Acceptance: each Megatron/DeepSpeed/vLLM configuration reads back to within 1% of the
    plan's model (DeepSeek-V3 class included)."""
    x = launched_all[example]
    for d in x.plan["deployments"]:
        where = x.folder_of(d)
        plan_params = _plan_params(d["workload"], x)
        w = x.workload(d["workload"])
        if (where / "megatron.args").exists():
            tokenizer = _default(where / "train.sh", "TOKENIZER")
            got = megatron_params(flag_values(where / "megatron.args"), TOKENIZER_VOCAB[tokenizer])
        elif (where / "model" / "config.json").exists():
            got = hf_params(json.loads((where / "model" / "config.json").read_text()))
        elif (where / "ds_config.json").exists():
            # A model of a size only: no architecture is invented; the checkpoint gives it.
            assert "preset" not in w["model"] and "MODEL:?" in (where / "train.sh").read_text()
            continue
        else:
            served = _served(where)
            assert served in SERVED_PARAMS_B, served
            got = SERVED_PARAMS_B[served] * 1e9
        assert got == pytest.approx(plan_params, rel=0.01), (d["workload"], got, plan_params)


def _default(script: Path, name: str) -> str:
    """The default a script gives ${NAME:-default}."""
    text = script.read_text()
    start = text.index("${" + name + ":-") + len(name) + 4
    return text[start : text.index("}", start)]


def _served(where: Path) -> str:
    for path in sorted(where.rglob("vllm.sh")):
        for line in path.read_text().splitlines():
            if " vllm serve " in f" {line}":
                return shlex.split(line)[shlex.split(line).index("serve") + 1]
    raise AssertionError(f"no vllm serve line under {where}")


def test_the_deepseek_v3_class_arguments_build_deepseek_v3(
    launched_all: dict[str, Launched],
) -> None:
    """256 routed experts of 2,048, one shared expert, 3 dense first layers, MLA ranks
    1536/512, one MTP module, sigmoid routing over 8 groups (4 per token): DeepSeek-V3's
    config, which the dense-FFN experts (~6.2T expert parameters) were not."""
    x = launched_all[DEEPSEEK[0].stem]
    args = flag_values(x.folder / "pretrain-moe" / "megatron.args")
    assert args["--moe-ffn-hidden-size"] == ["2048"]
    assert args["--moe-shared-expert-intermediate-size"] == ["2048"]
    assert args["--moe-layer-freq"] == ["[0]*3+[1]*58"]
    assert (args["--q-lora-rank"], args["--kv-lora-rank"]) == (["1536"], ["512"])
    assert args["--mtp-num-layers"] == ["1"]
    assert args["--moe-router-score-function"] == ["sigmoid"]
    assert "--multi-latent-attention" in args and "--group-query-attention" not in args
    experts = 58 * 256 * 3 * 7168 * 2048
    assert experts == pytest.approx(6.53e11, rel=0.01)  # ≈0.65T, not ≈6.2T


@pytest.mark.parametrize("example", NAMES)
def test_megatron_builds_llama_as_llama(launched_all: dict[str, Launched], example: str) -> None:
    """RMSNorm, RoPE at the model's base, SwiGLU, no biases, untied output layer, GQA groups."""
    x = launched_all[example]
    for d in x.plan["deployments"]:
        path = x.folder_of(d) / "megatron.args"
        preset = x.workload(d["workload"])["model"].get("preset", "")
        if not path.exists() or not preset.startswith("llama"):
            continue
        args = flag_values(path)
        assert args["--normalization"] == ["RMSNorm"]
        assert args["--position-embedding-type"] == ["rope"]
        assert args["--rotary-base"] == (["10000"] if "llama-2" in preset else ["500000"])
        for switch in (
            "--swiglu",
            "--disable-bias-linear",
            "--untie-embeddings-and-output-weights",
        ):
            assert switch in args, switch
        if preset == "llama-2-70b":
            assert args["--num-query-groups"] == ["8"]


def _all(launched_all: dict[str, Launched], pattern: str) -> list[Path]:
    return sorted(p for x in launched_all.values() for p in x.folder.rglob(pattern))


def test_every_script_parses_in_bash(launched_all: dict[str, Launched]) -> None:
    scripts = _all(launched_all, "*.sh") + _all(launched_all, "*.sbatch")
    assert len(scripts) > 20
    for path in scripts:
        run = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert run.returncode == 0, (path, run.stderr)


def test_a_model_without_a_public_id_still_parses() -> None:
    """The variable that names it carries a message bash can read (no quote inside)."""
    from gpusolve.render.launch.common import required

    line = f"vllm serve {required('MODEL', 'set MODEL to the checkpoint path or Hugging Face id')}"
    run = subprocess.run(["bash", "-n"], input=line + "\n", capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with pytest.raises(AssertionError):
        required("MODEL", "the model's path")


@pytest.mark.parametrize("example", NAMES)
def test_megatron_with_tensor_parallelism_sets_one_connection(
    launched_all: dict[str, Launched], example: str
) -> None:
    """Megatron-LM's validate_args: TP or CP > 1 before Blackwell needs
    CUDA_DEVICE_MAX_CONNECTIONS=1, and Megatron-FSDP needs it not to be 1."""
    x = launched_all[example]
    for d in x.plan["deployments"]:
        where = x.folder_of(d)
        if not (where / "megatron.args").exists():
            continue
        script = (where / "train.sh").read_text()
        fsdp = "--use-megatron-fsdp" in flag_values(where / "megatron.args")
        p = d["parallel"]
        assert ("unset CUDA_DEVICE_MAX_CONNECTIONS" in script) == fsdp
        one = "export CUDA_DEVICE_MAX_CONNECTIONS=1" in script
        assert one == (not fsdp and (p["tp"] > 1 or p["cp"] > 1)), d["workload"]


@pytest.mark.parametrize("example", NAMES)
def test_sharding_is_the_plans(launched_all: dict[str, Launched], example: str) -> None:
    """ZeRO-2/3 never goes to Megatron's distributed optimizer alone."""
    x = launched_all[example]
    for d in x.plan["deployments"]:
        where = x.folder_of(d)
        stage = d["parallel"]["zero_stage"]
        if (where / "megatron.args").exists():
            args = flag_values(where / "megatron.args")
            if stage >= 2:
                strategy = {2: "optim_grads", 3: "optim_grads_params"}[stage]
                assert args["--data-parallel-sharding-strategy"] == [strategy]
            assert ("--use-distributed-optimizer" in args) == (stage >= 1)
        elif (where / "ds_config.json").exists():
            config = json.loads((where / "ds_config.json").read_text())
            assert config["zero_optimization"]["stage"] == stage
            recomputes = d["parallel"]["gradient_checkpointing"] != "none"
            assert ("activation_checkpointing" in config) == recomputes


@pytest.mark.parametrize("example", NAMES)
def test_fine_tunes_start_from_a_checkpoint(
    launched_all: dict[str, Launched], example: str
) -> None:
    x = launched_all[example]
    for d in x.plan["deployments"]:
        where, kind = x.folder_of(d), x.workload(d["workload"])["kind"]
        if kind not in ("full_finetune", "lora", "qlora"):
            continue
        script = (where / "train.sh").read_text()
        if (where / "megatron.args").exists():
            assert "--finetune" in flag_values(where / "megatron.args")
            assert "--load" in script and "CHECKPOINT:?" in script
        else:
            assert "--model_name_or_path" in script
        if kind in ("lora", "qlora"):
            adapter = json.loads((where / "lora" / "adapter_config.json").read_text())
            lora = x.workload(d["workload"]).get("lora") or {}
            assert adapter["peft_type"] == "LORA" and adapter["r"] == lora.get("rank", 16)


def test_sbatch_runs_train_sh_from_the_submit_directory(
    launched_all: dict[str, Launched], tmp_path: Path
) -> None:
    """Slurm runs a spooled copy of the batch file, so $0 is not in the launch folder: with
    a stubbed `srun` on PATH, the batch file started from elsewhere runs train.sh there."""
    folder = next(p.parent for p in _all(launched_all, "slurm.sbatch"))
    spool = tmp_path / "spool"
    spool.mkdir()
    shutil.copy(folder / "slurm.sbatch", spool / "slurm_script")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "srun.log"
    (stubs / "srun").write_text(f'#!/usr/bin/env bash\necho "$PWD $*" > {log}\n')
    (stubs / "scontrol").write_text("#!/usr/bin/env bash\necho node-1\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "SLURM_SUBMIT_DIR": str(folder),
        "SLURM_JOB_NODELIST": "node-1",
    }
    run = subprocess.run(
        ["bash", str(spool / "slurm_script")], cwd=tmp_path, env=env, capture_output=True
    )
    assert run.returncode == 0, run.stderr
    assert log.read_text().split() == [str(folder), "bash", "train.sh"]


def _serve_lines(path: Path) -> list[list[str]]:
    return [
        shlex.split(x.rstrip(" &"))
        for x in path.read_text().splitlines()
        if ("vllm serve" in x or "sglang.launch_server" in x) and not x.startswith("#")
    ]


@pytest.mark.parametrize("example", NAMES)
def test_model_length_is_the_longest_request(
    launched_all: dict[str, Launched], example: str
) -> None:
    """--max-model-len / --context-length: the workload's context, never the mean request;
    without a context, the engine's default (the model's own window)."""
    x = launched_all[example]
    for d in x.plan["deployments"]:
        w = x.workload(d["workload"])
        if w["kind"] != "inference":
            continue
        for path in (x.folder_of(d)).rglob("*.sh"):
            for tokens in _serve_lines(path):
                flag = "--max-model-len" if "serve" in tokens else "--context-length"
                if "context_len" in w:
                    assert tokens[tokens.index(flag) + 1] == str(w["context_len"])
                else:
                    assert flag not in tokens


def test_disaggregated_serving_is_wired(launched_all: dict[str, Launched]) -> None:
    """A router in front; every instance on its own port, NIXL side-channel port and
    SGLang bootstrap port; each advertises NODE_IP; the transfer names its RDMA device."""
    x = launched_all["chat-70b-disaggregated"]
    where = x.folder / "chat-70b-rag"
    router = (where / "router.sh").read_text()
    assert "toy_proxy_server.py" in router and "sglang_router.launch_router" in router
    ports: list[str] = []
    for engine in ("vllm", "sglang"):
        seen: list[str] = []
        sides: list[str] = []
        boots: list[str] = []
        for role in ("prefill", "decode"):
            for tokens in _serve_lines(where / role / f"{engine}.sh"):
                seen.append(tokens[tokens.index("--port") + 1])
                env = dict(t.split("=", 1) for t in tokens if "=" in t and not t.startswith("-"))
                if engine == "vllm":
                    sides.append(env["VLLM_NIXL_SIDE_CHANNEL_PORT"])
                    assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"].startswith("${NODE_IP:?")
                    assert "RDMA_DEVICE" in env["UCX_NET_DEVICES"]
                else:
                    assert tokens[tokens.index("--disaggregation-mode") + 1] == role
                    assert tokens[tokens.index("--disaggregation-ib-device") + 1].startswith(
                        "${RDMA"
                    )
                    assert tokens[tokens.index("--host") + 1].startswith("${NODE_IP:?")
                    if role == "prefill":
                        boots.append(tokens[tokens.index("--disaggregation-bootstrap-port") + 1])
        assert len(set(seen)) == len(seen) and len(set(sides)) == len(sides)
        assert len(set(boots)) == len(boots)
        assert "8000" not in seen  # the router's port
        ports = seen
    for port in ports:
        assert port in router


def _bench_figures(line: list[str]) -> dict[str, str]:
    return {t: line[i + 1] for i, t in enumerate(line[:-1]) if t.startswith("--")}


@pytest.mark.parametrize("example", NAMES)
def test_bench_sh_carries_the_plans_figures(
    launched_all: dict[str, Launched], example: str
) -> None:
    """The plan's request shape, concurrency and latency targets; the tokens/s it bought."""
    x = launched_all[example]
    for d in x.plan["deployments"]:
        w = x.workload(d["workload"])
        if w["kind"] != "inference":
            continue
        text = (x.folder_of(d) / "bench.sh").read_text()
        p = d["parallel"]
        pools = d.get("pools")
        concurrency = p["micro_batch"] * (pools["decode_replicas"] if pools else 1)
        rate = d["throughput"] / (1 if pools else d["replicas"])
        assert f"Expected output tokens/s: {rate:,.0f} at {concurrency} concurrent" in text
        for line in text.splitlines():
            if "bench serve" not in line and "bench_serving" not in line:
                continue
            f = _bench_figures(shlex.split(line))
            assert f["--max-concurrency"] == str(concurrency)
            if "prompt_tokens" in w and "output_tokens" in w:
                assert f["--random-input-len"] == str(w["prompt_tokens"])
                assert f["--random-output-len"] == str(w["output_tokens"])
            slos = line.split("--goodput ")[1].split() if "--goodput" in line else []
            if "ttft_ms" in w:
                assert f"ttft:{w['ttft_ms']:g}" in slos
            if "tpot_ms" in w:
                assert f"tpot:{w['tpot_ms']:g}" in slos


@pytest.mark.parametrize("example", NAMES)
def test_training_readme_gives_the_expected_step(
    launched_all: dict[str, Launched], example: str
) -> None:
    x = launched_all[example]
    for d in x.plan["deployments"]:
        if x.workload(d["workload"])["kind"] == "inference":
            continue
        p, seq = d["parallel"], x.workload(d["workload"]).get("seq_len", 2048)
        step = p["micro_batch"] * p["grad_accum"] * p["dp"] * seq / d["throughput"]
        text = (x.folder_of(d) / "README.md").read_text()
        assert f"step time: {step:,.2f} s" in text
        assert f"tokens/s: {d['throughput']:,.0f} in all" in text


def _pretrain_70b(launched_all: dict[str, Launched], **parallel: int) -> tuple[Any, Any]:
    """The 70B pretraining deployment (TP4 PP4 on H800), changed as the test needs."""
    from gpusolve.models.plan import Deployment

    x = launched_all["pretrain-70b-infiniband"]
    d = Deployment.model_validate(x.plan["deployments"][0])
    d = d.model_copy(update={"parallel": d.parallel.model_copy(update=parallel)})
    return d, x.workload("pretrain-70b")


def test_a_zero3_plan_with_tensor_parallelism_goes_to_megatron_fsdp(
    launched_all: dict[str, Launched],
) -> None:
    """ZeRO-3 at TP > 1: Megatron-FSDP sharding weights, gradients and optimizer states, not
    the distributed optimizer alone (which shards only the optimizer states)."""
    from gpusolve.models.requirements import make_workload
    from gpusolve.render.launch.common import VENDORS
    from gpusolve.render.launch.models import model_of
    from gpusolve.render.launch.training import training_files

    d, raw = _pretrain_70b(launched_all, zero_stage=3)
    w = make_workload(raw)
    files = {f.path: f.text for f in training_files(d, w, model_of(w), VENDORS["nvidia"], "hopper")}
    args = shlex.split(files["pretrain-70b/megatron.args"])
    assert "--use-megatron-fsdp" in args
    assert args[args.index("--data-parallel-sharding-strategy") + 1] == "optim_grads_params"
    assert "unset CUDA_DEVICE_MAX_CONNECTIONS" in files["pretrain-70b/train.sh"]


def test_a_full_finetune_with_model_parallelism_loads_its_checkpoint(
    launched_all: dict[str, Launched],
) -> None:
    from gpusolve.models.requirements import make_workload
    from gpusolve.render.launch.common import VENDORS
    from gpusolve.render.launch.models import model_of
    from gpusolve.render.launch.training import training_files

    d, raw = _pretrain_70b(launched_all)
    w = make_workload({**raw, "kind": "full_finetune"})
    files = {f.path: f.text for f in training_files(d, w, model_of(w), VENDORS["nvidia"], "hopper")}
    args = shlex.split(files["pretrain-70b/megatron.args"])
    assert {"--finetune", "--no-load-optim", "--no-load-rng"} <= set(args)
    script = files["pretrain-70b/train.sh"]
    assert '--load "${CHECKPOINT:?' in script and "meta-llama/Llama-2-70b-hf" in script
    run = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_blackwell_needs_no_single_connection(launched_all: dict[str, Launched]) -> None:
    from gpusolve.render.launch.megatron import needs_one_connection

    d, _ = _pretrain_70b(launched_all)
    assert needs_one_connection(d, "hopper") and needs_one_connection(d, None)
    assert not needs_one_connection(d, "blackwell")


def _presets() -> list[str]:
    from gpusolve.estimate.presets import preset_names

    return preset_names()


@pytest.mark.parametrize("preset", _presets())
def test_megatron_arguments_of_every_preset_build_its_model(
    launched_all: dict[str, Launched], preset: str, tmp_path: Path
) -> None:
    """Every shipped model, launched on Megatron-LM, reads back to its parameter count (the
    vocabulary is the tokenizer's, which the arguments do not carry)."""
    from gpusolve.models.requirements import make_workload
    from gpusolve.render.launch.megatron import megatron_args
    from gpusolve.render.launch.models import model_of

    d, _ = _pretrain_70b(launched_all, tp=1, pp=1)
    w = make_workload(
        {
            "name": "x",
            "kind": "pretrain",
            "model": {"preset": preset},
            "tokens": 1e9,
            "seq_len": 2048,
        }
    )
    model = model_of(w)
    (tmp_path / "megatron.args").write_text(shlex.join(megatron_args(d, w, model)))
    got = megatron_params(flag_values(tmp_path / "megatron.args"), model.arch.vocab)
    assert got == pytest.approx(model.arch.params, rel=0.01), (got, model.arch.params)
