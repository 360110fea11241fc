"""A serving deployment's folder: `vllm.sh` and `sglang.sh` (one server per replica on its
own GPUs and port), and for a disaggregated deployment a prefill and a decode folder wired
as the engines' own guides wire them, with `router.sh` in front:

- vLLM, docs/features/nixl_connector_usage.md ("NixlConnector Usage Guide", multi-instance
  setup): NixlConnector as kv_producer / kv_consumer, a distinct VLLM_NIXL_SIDE_CHANNEL_PORT
  per instance on a host, VLLM_NIXL_SIDE_CHANNEL_HOST set to the address other nodes reach
  (it defaults to localhost), UCX_NET_DEVICES for the transport's device, and
  tests/v1/kv_connector/nixl_integration/toy_proxy_server.py as the proxy.
- SGLang, docs/advanced_features/pd_disaggregation.md ("PD Disaggregation"):
  --disaggregation-mode, the transfer backend (Mooncake by default) and its
  --disaggregation-ib-device, a distinct --disaggregation-bootstrap-port per prefill server
  (default 8998), and sglang_router's launch_router --pd-disaggregation with each prefill
  URL followed by its bootstrap port.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpusolve.models.plan import Deployment
from gpusolve.models.requirements import InferenceWorkload
from gpusolve.render.launch.common import (
    LaunchFile,
    Vendor,
    gpus_per_node,
    quoted,
    required,
    script,
)
from gpusolve.render.launch.models import Model

FIRST_SERVE_PORT = 8000
# Disaggregated pools: their own port ranges, so the two pools never collide on one host,
# and the router on FIRST_SERVE_PORT where an aggregated service would be.
POOL_PORTS = {"prefill": 8100, "decode": 8200}
NIXL_SIDE_PORTS = {"prefill": 5600, "decode": 5700}  # vLLM's default side channel is 5600
BOOTSTRAP_PORT = 8998  # SGLang's default --disaggregation-bootstrap-port
NODE_IP = required("NODE_IP", "set NODE_IP to the address other nodes reach this node at")
RDMA_DEVICE = required(
    "RDMA_DEVICE", "set RDMA_DEVICE to the RDMA NIC of the KV transfer, e.g. mlx5_0"
)


def serving_max_len(w: InferenceWorkload) -> int | None:
    """The longest request: the workload's context, or its sequence length where it states
    one; else None, and the engine takes the model's own context window."""
    if w.context_len:
        return w.context_len
    if "seq_len" in w.model_fields_set:
        return w.seq_len
    return None


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
    # MoE: whole experts a rank ({ep}: the EP degree), and attention data-parallel over the
    # replica's {ranks} ranks with DeepEP's dispatch (what moeserve.exchange_s times);
    # `dp_ranks_tp`: the TP flag then says each DP rank's own TP, and the sequence cap is
    # each DP rank's.
    expert_parallel: tuple[str, ...]
    attention_dp: tuple[str, ...]
    dp_ranks_tp: bool


VLLM = EngineFlags(
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--max-num-seqs",
    "--max-model-len",
    "--gpu-memory-utilization",
    "fp8",
    # docs/serving/expert_parallel_deployment.md and data_parallel_deployment.md: EP size is
    # TP x DP with --enable-expert-parallel; attention DP is DP ranks of TP 1 each.
    ("--enable-expert-parallel",),
    ("--data-parallel-size", "{ranks}", "--all2all-backend", "deepep_low_latency"),
    dp_ranks_tp=True,
)
SGLANG = EngineFlags(
    "--tp-size",
    "--pp-size",
    "--max-running-requests",
    "--context-length",
    "--mem-fraction-static",
    "fp8_e4m3",
    # docs/advanced_features/expert_parallelism.md, server_arguments: --ep-size; DP
    # attention with TP for the rest, --enable-dp-attention --dp-size over the TP ranks.
    ("--ep-size", "{ep}"),
    ("--enable-dp-attention", "--dp-size", "{ranks}", "--moe-a2a-backend", "deepep"),
    dp_ranks_tp=False,
)
QUANTIZATION = {"fp8": "fp8", "int4": "awq", "nf4": "bitsandbytes"}


def moe_args(engine: EngineFlags, d: Deployment) -> list[str]:
    """The engine's flags for the plan's expert split (none for TP-sliced experts)."""
    p = d.parallel
    if p.ep <= 1:
        return []
    flags = engine.expert_parallel + (engine.attention_dp if p.attention_dp else ())
    return [f.format(ep=p.ep, ranks=p.tp) for f in flags]


def serve_args(engine: EngineFlags, d: Deployment, w: InferenceWorkload, port: int) -> list[str]:
    p = d.parallel
    per_rank = p.attention_dp and engine.dp_ranks_tp
    tp = 1 if per_rank else p.tp
    # vLLM's DP ranks each schedule their own sequences (one engine core each).
    seqs = -(-p.micro_batch // p.tp) if per_rank else p.micro_batch
    args = [
        engine.tp, str(tp),
        engine.pp, str(p.pp),
        engine.seqs, str(seqs),
        engine.memory, f"{memory_fraction(d):g}",
        "--dtype", "float16" if w.precision == "fp16" else "bfloat16",
        "--port", str(port),
    ]  # fmt: skip
    longest = serving_max_len(w)
    if longest is not None:
        args += [engine.max_len, str(longest)]
    quant = QUANTIZATION.get(w.precision)
    if quant:
        args += ["--quantization", quant]
    if w.kv_cache_precision == "fp8":
        args += ["--kv-cache-dtype", engine.kv_fp8]
    return args + moe_args(engine, d)


@dataclass(frozen=True)
class Instance:
    """One server process: its GPUs, its port, and what it adds to the engine's flags."""

    gpus: str
    port: int
    vllm_env: tuple[str, ...] = ()
    vllm_extra: tuple[str, ...] = ()
    sglang_extra: tuple[str, ...] = ()


def serving_files(
    d: Deployment, w: InferenceWorkload, model: Model, vendor: Vendor
) -> list[LaunchFile]:
    if d.pools is not None:
        return disaggregated_files(d, w, model, vendor)
    per_node = replicas_per_node(d)
    width = d.parallel.tp * d.parallel.pp
    instances = [
        Instance(_devices(i * width, width), FIRST_SERVE_PORT + i) for i in range(per_node)
    ]
    return _scripts(d.workload, d, w, model, vendor, instances)


def _devices(first: int, width: int) -> str:
    return ",".join(str(g) for g in range(first, first + width))


def _scripts(
    folder: str,
    d: Deployment,
    w: InferenceWorkload,
    model: Model,
    vendor: Vendor,
    instances: list[Instance],
    role: str = "",
) -> list[LaunchFile]:
    width = d.parallel.tp * d.parallel.pp
    spans_nodes = width > gpus_per_node(d)
    served = model.served or "${MODEL:?set MODEL to the checkpoint path or Hugging Face id}"
    ref = f'"{served}"' if served.startswith("$") else quoted([served])
    head = [
        f"# {d.workload}{' ' + role if role else ''}: {d.replicas} replica(s) of "
        f"{replica_label(d)}, {d.parallel.micro_batch} concurrent sequences "
        f"each, on {d.servers} node(s) x {gpus_per_node(d)} GPUs ({d.gpus} x {d.card}), as the "
        "plan sized it.",
        f"# GPU memory fraction {memory_fraction(d):g}: the plan's {d.headroom:.0%} headroom.",
        _length_note(w),
        *([f"# {d.card}: {vendor.note}."] if vendor.note else []),
        *_dispatch_note(d),
    ]
    if spans_nodes and d.parallel.attention_dp:
        head.append(
            "# One replica spans nodes (experts over servers, attention data-parallel): start "
            "the engine's multi-node data-parallel mode per its docs (vLLM: "
            "--data-parallel-size-local, --data-parallel-address, --headless on the other "
            "nodes; SGLang: --nnodes/--node-rank/--dist-init-addr)."
        )
    elif spans_nodes:
        head.append(
            "# One replica spans nodes (pipeline across servers): start the engine's "
            "multi-node mode (vLLM: a Ray cluster; SGLang: --nnodes/--node-rank) per its docs."
        )
        instances = instances[:1]
    else:
        head.append(f"# Run on each node: {len(instances)} server process(es), one per replica.")
    vllm_lines, sglang_lines = list(head), list(head)
    for inst in instances:
        devices = "" if spans_nodes else f"{vendor.visible_devices}={inst.gpus} "
        vllm_env = "".join(f"{e} " for e in inst.vllm_env)
        vllm = serve_args(VLLM, d, w, inst.port) + list(inst.vllm_extra)
        sglang = serve_args(SGLANG, d, w, inst.port) + list(inst.sglang_extra)
        if vendor.sglang_device is not None:
            sglang += ["--device", vendor.sglang_device]
        vllm_lines.append(f"{devices}{vllm_env}vllm serve {ref} {quoted(vllm)} &")
        sglang_lines.append(
            f"{devices}python -m sglang.launch_server --model-path {ref} {quoted(sglang)} &"
        )
    return [
        LaunchFile(f"{folder}/vllm.sh", script([*vllm_lines, "wait"])),
        LaunchFile(f"{folder}/sglang.sh", script([*sglang_lines, "wait"])),
    ]


def replica_label(d: Deployment) -> str:
    p = d.parallel
    label = f"TP{p.tp} PP{p.pp}" + (f" EP{p.ep}" if p.ep > 1 else "")
    return label + (" attention-DP" if p.attention_dp else "")


def _dispatch_note(d: Deployment) -> list[str]:
    if not d.parallel.attention_dp:
        return []
    return [
        "# The plan times each MoE layer's dispatch and combine as DeepEP's low-latency "
        "kernels send them (each token's expert copies point to point), which the "
        "all-to-all backend flags below select: DeepEP must be installed (the engines' EP "
        "guides)."
    ]


def _length_note(w: InferenceWorkload) -> str:
    longest = serving_max_len(w)
    if longest is not None:
        return f"# Longest request: {longest} tokens (the workload's context)."
    return (
        "# No context in the workload: the engine takes the model's own context window "
        "(give context_len to cap it)."
    )


# ----------------------------------------------------------------------------- pools


def pool_of(d: Deployment, role: str) -> Deployment:
    """The deployment as one pool of a disaggregated one: its TP, its replicas, its GPUs."""
    pools = d.pools
    assert pools is not None
    prefill = role == "prefill"
    tp, replicas = (
        (pools.prefill_tp, pools.prefill_replicas)
        if prefill
        else (pools.decode_tp, pools.decode_replicas)
    )
    gpus = tp * replicas
    servers = 1 if pools.one_server else -(-gpus // pools.gpus_per_node)
    moe = {
        "ep": pools.prefill_ep if prefill else pools.decode_ep,
        "attention_dp": pools.prefill_attention_dp if prefill else pools.decode_attention_dp,
    }
    parallel = d.parallel.model_copy(update={"tp": tp, "pp": 1, **moe})
    return d.model_copy(
        update={"parallel": parallel, "replicas": replicas, "gpus": gpus, "servers": servers}
    )


def pool_instances(d: Deployment, role: str) -> list[int]:
    """The ports of one node's servers in this pool."""
    pool = pool_of(d, role)
    return [POOL_PORTS[role] + i for i in range(replicas_per_node(pool))]


def disaggregated_files(
    d: Deployment, w: InferenceWorkload, model: Model, vendor: Vendor
) -> list[LaunchFile]:
    pools = d.pools
    assert pools is not None
    backend = "ascend" if vendor.sglang_device == "npu" else "mooncake"
    files: list[LaunchFile] = []
    for role in ("prefill", "decode"):
        pool = pool_of(d, role)
        tp = pool.parallel.tp
        # Sharing one server, the prefill pool takes the GPUs after the decode pool's.
        first = pools.decode_tp * pools.decode_replicas if pools.one_server else 0
        first = first if role == "prefill" else 0
        kv = {"kv_connector": "NixlConnector", "kv_role": f"kv_{_vllm_role(role)}"}
        instances = []
        for i, port in enumerate(pool_instances(d, role)):
            sglang = [
                "--disaggregation-mode", role,
                "--disaggregation-transfer-backend", backend,
                "--disaggregation-ib-device", "@RDMA_DEVICE@",
                "--host", "@NODE_IP@",
            ]  # fmt: skip
            if role == "prefill":
                sglang += ["--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT + i)]
            instances.append(
                Instance(
                    _devices(first + i * tp, tp),
                    port,
                    vllm_env=(
                        f"VLLM_NIXL_SIDE_CHANNEL_HOST={NODE_IP}",
                        f"VLLM_NIXL_SIDE_CHANNEL_PORT={NIXL_SIDE_PORTS[role] + i}",
                        f'UCX_NET_DEVICES="${{UCX_NET_DEVICES:-{RDMA_DEVICE[1:-1]}:1}}"',
                    ),
                    vllm_extra=("--kv-transfer-config", json.dumps(kv, separators=(",", ":"))),
                    sglang_extra=tuple(sglang),
                )
            )
        for f in _scripts(f"{d.workload}/{role}", pool, w, model, vendor, instances, role):
            files.append(LaunchFile(f.path, _placeholders(f.text)))
    files.append(LaunchFile(f"{d.workload}/router.sh", router_script(d, backend)))
    return files


def _vllm_role(role: str) -> str:
    return "producer" if role == "prefill" else "consumer"


def _placeholders(text: str) -> str:
    """The variables the instance lines name, as shell expansions (quoted words in the
    flag list become the user's variables)."""
    return text.replace("@RDMA_DEVICE@", RDMA_DEVICE).replace("@NODE_IP@", NODE_IP)


def router_script(d: Deployment, backend: str) -> str:
    """One front door for the two pools on FIRST_SERVE_PORT: every instance of every node,
    each prefill server with its bootstrap port (SGLang)."""
    pools = d.pools
    assert pools is not None
    servers = {role: pool_of(d, role).servers for role in ("prefill", "decode")}
    ports = {role: " ".join(str(p) for p in pool_instances(d, role)) for role in servers}
    lines = [
        f"# {d.workload}: the router in front of {pools.prefill_replicas} prefill and "
        f"{pools.decode_replicas} decode server(s); clients and bench.sh use port "
        f"{FIRST_SERVE_PORT}.",
        "# ENGINE=vllm (vLLM's NIXL proxy, from a vLLM source checkout) or sglang "
        "(pip install sglang-router).",
        'ENGINE="${1:-vllm}"',
    ]
    for role in ("prefill", "decode"):
        upper = role.upper()
        hint = f"set {upper}_NODES to the {servers[role]} {role} node address(es), space-separated"
        lines += [
            f"read -r -a {upper} <<< {required(f'{upper}_NODES', hint)}",
            f'if [ "${{#{upper}[@]}}" -ne {servers[role]} ]; then',
            f'  echo "router.sh: {upper}_NODES needs {servers[role]} address(es)" >&2',
            "  exit 1",
            "fi",
        ]
    lines += [
        "hosts_p=() ports_p=() hosts_d=() ports_d=() sglang=()",
        'for node in "${PREFILL[@]}"; do',
        "  i=0",
        f"  for port in {ports['prefill']}; do",
        '    hosts_p+=("$node") ports_p+=("$port")',
        f'    sglang+=(--prefill "http://$node:$port" "$(({BOOTSTRAP_PORT} + i))")',
        "    i=$((i + 1))",
        "  done",
        "done",
        'for node in "${DECODE[@]}"; do',
        f"  for port in {ports['decode']}; do",
        '    hosts_d+=("$node") ports_d+=("$port")',
        '    sglang+=(--decode "http://$node:$port")',
        "  done",
        "done",
        'if [ "$ENGINE" = vllm ]; then',
        '  exec python "'
        + required("VLLM_SRC", "set VLLM_SRC to a vLLM source checkout")[1:-1]
        + '/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py" '
        f'--port {FIRST_SERVE_PORT} --prefiller-hosts "${{hosts_p[@]}}" '
        '--prefiller-ports "${ports_p[@]}" --decoder-hosts "${hosts_d[@]}" '
        '--decoder-ports "${ports_d[@]}"',
        "fi",
        "exec python -m sglang_router.launch_router --pd-disaggregation "
        f'"${{sglang[@]}}" --host 0.0.0.0 --port {FIRST_SERVE_PORT}',
    ]
    return script(lines)
