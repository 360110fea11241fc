"""Two plans compared figure by figure: `other` minus `chosen`, in TCO, penalties and
each workload's throughput as printed, worded by its sign ("dearer by X" / "cheaper by
X"), never with a signed number (the next-best plans, the why-not plans)."""

from __future__ import annotations

from gpusolve.models.plan import Cost, Deployment, PlanDelta, ThroughputDelta


def printed_throughput(d: Deployment) -> int:
    """Throughput as the renderers print it (whole tokens/s), so deltas add up as read."""
    return int(f"{d.throughput:.0f}")


def throughput_unit(d: Deployment) -> str:
    return "tokens/s" if d.time_to_train_h is not None else "generated tokens/s"


def compare(
    objective: str,
    chosen: Cost,
    chosen_deployments: list[Deployment],
    other: Cost,
    other_deployments: list[Deployment],
) -> PlanDelta:
    """`other` minus `chosen`, figure by figure, with the words to print."""
    mine = {d.workload: d for d in chosen_deployments}
    throughput = [
        ThroughputDelta(
            workload=d.workload,
            delta=printed_throughput(d) - printed_throughput(mine[d.workload]),
            unit=throughput_unit(d),
        )
        for d in other_deployments
        if d.workload in mine
    ]
    tco = other.tco - chosen.tco
    penalties = other.penalties - chosen.penalties
    money_words = [
        change("TCO", tco, chosen.currency, ("dearer", "cheaper")),
        change("penalties", penalties, chosen.currency, ("higher", "lower")),
    ]
    credit = other.credits - chosen.credits
    if other.credits or chosen.credits:
        money_words.append(change("resale credit", credit, chosen.currency, ("higher", "lower")))
    if objective == "max-throughput":
        words = [
            change(f"{t.workload} throughput", t.delta, t.unit, ("higher", "lower"))
            for t in throughput
        ]
        summary = "; ".join(words + money_words)
    else:
        label = "TCO + penalties - resale" if other.credits or chosen.credits else "TCO + penalties"
        total = change(label, tco + penalties - credit, chosen.currency, ("dearer", "cheaper"))
        summary = "; ".join([*money_words, total])
    return PlanDelta(
        tco=tco,
        penalties=penalties,
        objective_value=tco + penalties - credit,
        throughput=throughput,
        summary=summary,
    )


def change(label: str, value: float, unit: str, words: tuple[str, str]) -> str:
    """'TCO dearer by 1,234 CNY' / 'TCO cheaper by 1,234 CNY' / 'TCO unchanged': the sign
    chooses the word, so the number printed is never negative."""
    if value == 0:
        return f"{label} unchanged"
    word = words[0] if value > 0 else words[1]
    return f"{label} {word} by {abs(value):,.0f} {unit}"
