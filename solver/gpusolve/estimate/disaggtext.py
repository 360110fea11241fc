"""What a disaggregated deployment says about itself: one line describing its pools, and
why it needs fewer or more GPUs than the aggregated layout at the same targets."""

from __future__ import annotations

from gpusolve.estimate.layout import ConfigEstimate, DisaggPools


def pool_label(shape: tuple[int, int, int, bool]) -> str:
    """'TP8', 'TP8 PP2', 'TP16 EP16 attention-DP': a replica's (tp, pp, ep, attention_dp)."""
    tp, pp, ep, attention_dp = shape
    label = f"TP{tp}" + (f" PP{pp}" if pp > 1 else "") + (f" EP{ep}" if ep > 1 else "")
    return label + (" attention-DP" if attention_dp else "")


def describe(pools: DisaggPools) -> str:
    """One line saying what the disaggregated deployment is."""
    p_shape = pool_label(
        (pools.prefill_tp, pools.prefill_pp, pools.prefill_ep, pools.prefill_attention_dp)
    )
    d_shape = pool_label(
        (pools.decode_tp, pools.decode_pp, pools.decode_ep, pools.decode_attention_dp)
    )
    where = (
        "both pools in one server"
        if pools.one_server
        else f"{pools.prefill_nodes} prefill + {pools.decode_nodes} decode server(s)"
    )
    return (
        f"disaggregated: prefill {pools.prefill_replicas} x {p_shape} "
        f"({pools.prefill_gpus} GPUs, {pools.prefill_utilisation:.0%} busy, mean wait "
        f"{pools.queue_s * 1000:,.0f} ms) + decode {pools.decode_replicas} x "
        f"{d_shape} ({pools.decode_gpus} GPUs), {where}; each prompt's KV cache crosses "
        f"{pools.link} in {pools.kv_transfer_s * 1000:,.1f} ms"
    )


def compare(aggregated: ConfigEstimate | None, disaggregated: ConfigEstimate) -> str:
    """Why one of the two needs fewer GPUs at the same targets, from their own figures."""
    d = disaggregated.serving
    assert d is not None and d.disaggregated is not None
    pools = d.disaggregated
    if aggregated is None or aggregated.serving is None:
        return (
            f"disaggregation is the only way found to meet the targets on this hardware: "
            f"decode steps without prefill chunks reach {d.tpot_s * 1000:,.1f} ms per token"
        )
    a = aggregated.serving
    a_nodes, d_nodes = aggregated.nodes, disaggregated.nodes
    saving = aggregated.gpus - disaggregated.gpus
    servers = f"({a_nodes} -> {d_nodes} servers)"
    if saving > 0:
        verdict = f"disaggregation saves {saving} GPUs {servers}"
    elif saving < 0:
        verdict = f"disaggregation costs {-saving} more GPUs {servers}"
    else:
        verdict = f"disaggregation needs the same {aggregated.gpus} GPUs {servers}"
    return (
        f"{verdict}: aggregated {aggregated.gpus} GPUs decode {a.batch} sequences per "
        f"{pool_label(aggregated.layout.replica_shape)} replica at "
        f"{a.tpot_s * 1000:,.1f} ms per token with prompt chunks in the steps "
        f"({a.prefill_share:.0%} of step time) and a {a.batch_limit} bound; "
        f"disaggregated decode replicas hold {d.batch} sequences at {d.tpot_s * 1000:,.1f} ms "
        f"without them, plus {pools.prefill_gpus} prefill GPUs {pools.prefill_utilisation:.0%} "
        f"busy and a {pools.kv_transfer_s * 1000:,.1f} ms KV transfer"
    )
