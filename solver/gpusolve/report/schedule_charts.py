"""The purchase schedule's timeline charts, drawn as `charts.py` draws the plan's (matplotlib
imported only inside each function, inline SVG with salted ids, text as paths).

Each chart has a table beside it in the page carrying the same figures."""

from __future__ import annotations

import textwrap

from gpusolve.models.schedule import Schedule
from gpusolve.report.charts import (
    KIND_COLOURS,
    available,
    few_ticks,
    new_figure,
    svg_of,
    thousands_formatter,
)

# The spend of a period by kind, in the order stacked (purchases at the bottom).
SPEND_KINDS = (
    ("capex", "servers bought", KIND_COLOURS["servers_capex"]),
    ("rack_rent", "racks contracted (whole term)", KIND_COLOURS["rack_rent"]),
    ("site_fixed", "site fees", KIND_COLOURS["bandwidth"]),
    ("energy", "energy", KIND_COLOURS["energy"]),
    ("cloud_rental", "rentals", KIND_COLOURS["cloud_rental"]),
    ("switching", "workloads moved", "#bdbdbd"),
)


def spend_rows(s: Schedule) -> list[tuple[str, list[int]]]:
    """(label, amount per period) of each kind the schedule spends on at all."""
    rows = [(label, [getattr(p.spend, key) for p in s.periods]) for key, label, _c in SPEND_KINDS]
    return [(label, values) for label, values in rows if any(values)]


def spend_chart(s: Schedule) -> str | None:
    """Spend per period stacked by kind. None without matplotlib or without periods."""
    if not available() or not s.periods:
        return None
    fig = new_figure(7.5, 3.2)
    ax = fig.subplots()
    x = [f"P{p.index}" for p in s.periods]
    bottom = [0] * len(x)
    colours = {label: c for _k, label, c in SPEND_KINDS}
    for label, values in spend_rows(s):
        ax.bar(
            x,
            values,
            bottom=bottom,
            label=label,
            color=colours[label],
            edgecolor="#333333",
            linewidth=0.4,
        )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel(f"spend in the period ({s.currency})")
    ax.set_xlabel("period (each starts at the month in the table)")
    ax.yaxis.set_major_formatter(thousands_formatter())
    ax.yaxis.set_major_locator(few_ticks())
    fig.legend(loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return svg_of(fig, "schedule-spend")


def capacity_series(s: Schedule) -> dict[str, list[tuple[int, int, float | None]]]:
    """workload -> (start month, capacity tokens/s, demand tokens/s) per period it runs in."""
    out: dict[str, list[tuple[int, int, float | None]]] = {}
    for p in s.periods:
        for c in p.capacity:
            out.setdefault(c.workload, []).append(
                (p.start_month, c.capacity_tokens_per_s, c.demand_tokens_per_s)
            )
    return out


def capacity_chart(s: Schedule) -> str | None:
    """Per workload, the tokens/s of what runs it against the demand, period by period
    (steps from each period's start month). None without matplotlib or capacity."""
    series = capacity_series(s)
    if not available() or not series:
        return None
    fig = new_figure(7.5, 1.2 + 1.6 * len(series))
    axes = fig.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0]
    end = s.horizon_months
    for ax, (name, points) in zip(axes, series.items(), strict=True):
        months = [m for m, _c, _d in points]
        ax.step(
            [*months, end],
            [c for _m, c, _d in points] + [points[-1][1]],
            where="post",
            color="#08519c",
            linewidth=1.6,
            label="capacity (tokens/s)",
        )
        shown = [(m, d) for m, _c, d in points if d is not None]
        if shown:
            ax.step(
                [m for m, _d in shown] + [end],
                [d for _m, d in shown] + [shown[-1][1]],
                where="post",
                color="#e6550d",
                linestyle="--",
                linewidth=1.4,
                label="demand (tokens/s)",
            )
        ax.set_title(textwrap.shorten(name, 40, placeholder="…"), fontsize=8, loc="left")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(thousands_formatter())
        ax.yaxis.set_major_locator(few_ticks())
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1].set_xlabel("month")
    axes[-1].set_xlim(0, end)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7, frameon=False)
    return svg_of(fig, "schedule-capacity")
