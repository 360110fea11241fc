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


def _by_workload(deployments: list[Deployment]) -> dict[str, tuple[int, str]]:
    """Each workload's throughput as printed, summed over its deployments (a split
    service's base and burst), and its unit."""
    out: dict[str, tuple[int, str]] = {}
    for d in deployments:
        before, _ = out.get(d.workload, (0, ""))
        out[d.workload] = (before + printed_throughput(d), throughput_unit(d))
    return out


def compare(
    objective: str,
    chosen: Cost,
    chosen_deployments: list[Deployment],
    other: Cost,
    other_deployments: list[Deployment],
) -> PlanDelta:
    """`other` minus `chosen`, figure by figure, with the words to print."""
    mine = _by_workload(chosen_deployments)
    theirs = _by_workload(other_deployments)
    throughput = [
        ThroughputDelta(workload=w, delta=tput - mine[w][0], unit=unit)
        for w, (tput, unit) in theirs.items()
        if w in mine
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
