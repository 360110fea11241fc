"""Charts drawn with matplotlib (a base dependency since the memo report), as inline SVG.

matplotlib is imported inside each function: `gpusolve --help`, `plan` text output and
every command that draws nothing never pay for it (tests/test_memo.py checks sys.modules).
Each chart stands beside a table or a caption carrying its figures, so the page reads the
same to a screen reader and on paper. Figures are built with the object API (no pyplot, so no
global backend state and no display), text is written as paths (the SVG needs no font)
and every figure has its own id salt, so several can sit in one HTML page.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusolve.explain.payments import CREDIT_KINDS, cumulative
from gpusolve.models.frontier import Frontier
from gpusolve.models.plan import Cost, PaymentMonth, Sensitivity, SensitivityRange
from gpusolve.render.fmt import COST_LABELS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib comes with gpusolve; an install that lost it (a --no-deps install, a broken
# environment) is told how to bring it back.
INSTALL_HINT = "pip install 'matplotlib>=3.8' (gpusolve's own dependency, missing here)"
# One colour per cost kind, the payment chart's families: purchases in dark blues, site
# charges in light blues, energy orange, cloud green (distinct in greyscale print too).
KIND_COLOURS = {
    "servers_capex": "#08519c",
    "network": "#3182bd",
    "storage": "#6baed6",
    "rack_rent": "#9ecae1",
    "energy": "#fd8d3c",
    "bandwidth": "#c6dbef",
    "cloud_rental": "#74c476",
}


def available() -> bool:
    """True when matplotlib can be imported (it is a dependency: false only in a broken
    or --no-deps install)."""
    return importlib.util.find_spec("matplotlib") is not None


def new_figure(width_in: float, height_in: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), layout="constrained")


def svg_of(fig: Figure, salt: str) -> str:
    """The figure as an <svg> element for inlining: no XML prolog, no DOCTYPE (which would
    name a DTD on the network), no date, ids unique to this chart."""
    import matplotlib

    buf = io.StringIO()
    with _quiet_glyphs(), matplotlib.rc_context(_rc(salt)):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    start = text.index("<svg")
    svg = text[start:]
    # ids such as "figure_1" and "patch_1" repeat in every figure: prefix them per chart.
    svg = re.sub(r'id="([^"]+)"', rf'id="{salt}-\1"', svg)
    svg = re.sub(r'(href|xlink:href)="#([^"]+)"', rf'\1="#{salt}-\2"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{salt}-\1)", svg)
    return svg.replace("<svg ", f'<svg id="{salt}-chart" role="img" ', 1)


def _rc(salt: str) -> Any:
    """Text as paths (the SVG needs no font where it is opened); ids salted per chart."""
    return {"svg.fonttype": "path", "svg.hashsalt": salt}


@contextlib.contextmanager
def _quiet_glyphs() -> Iterator[None]:
    """A name in a script the chart font lacks (中文 workload names) is drawn as boxes; the
    tables beside the chart carry it in full, so matplotlib's warning is only noise."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support")
        yield


def _money(value: float) -> str:
    return f"{value:,.0f}"


def cost_chart(cost: Cost) -> str | None:
    """The TCO paid by kind (servers, network, storage, rent, energy, bandwidth, cloud) as
    horizontal bars, each labelled with its amount and its share of the spend. Credits (the
    servers' residual value) stand apart from the TCO: not drawn here. None without
    matplotlib or with nothing to draw."""
    if not available():
        return None
    kinds = [
        (label, getattr(cost.breakdown, kind), KIND_COLOURS.get(kind, "#bdbdbd"))
        for kind, label in COST_LABELS.items()
        if kind not in CREDIT_KINDS
    ]
    kinds = [row for row in kinds if row[1] > 0][::-1]  # matplotlib draws bottom-up
    if not kinds:
        return None
    fig = new_figure(7.0, 0.5 + 0.45 * len(kinds))
    ax = fig.subplots()
    amounts = [amount for _, amount, _ in kinds]
    spend = sum(a for a in amounts if a > 0) or 1.0
    for y, (_label, amount, colour) in enumerate(kinds):
        bar = ax.barh(y, amount, color=colour, edgecolor="#333333", linewidth=0.5)
        ax.bar_label(bar, [f"{_money(amount)} ({amount / spend:.0%})"], padding=3, fontsize=8)
    ax.set_yticks(range(len(kinds)), [label for label, _, _ in kinds])
    ax.set_xlim(0.0, max(amounts) * 1.35 or 1.0)
    ax.axvline(0, color="#333333", linewidth=0.8)
    ax.set_xlabel(f"{cost.currency} over {cost.horizon_months} months")
    ax.xaxis.set_major_formatter(thousands_formatter())
    ax.xaxis.set_major_locator(few_ticks())
    ax.spines[["top", "right"]].set_visible(False)
    return svg_of(fig, "cost")


def thousands_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda x, _pos: f"{x:,.0f}")


def few_ticks() -> Any:
    """Four or so ticks: money labels are wide and must not overlap."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(nbins=4)


def _relative(value: float | None, fallback: float, current: float) -> tuple[float, bool]:
    """A range end as % change from the current value; the searched bound when the plan did
    not change within the search (flagged, drawn lighter)."""
    end, open_ended = (fallback, True) if value is None else (value, False)
    if current == 0:
        return 0.0, open_ended
    return (end / current - 1) * 100, open_ended


def tornado_rows(s: Sensitivity) -> list[tuple[SensitivityRange, float, float, bool, bool]]:
    """Per range: (range, low %, high %, low open, high open), narrowest first — the
    assumption the plan is most sensitive to at the top of the tornado."""
    rows = []
    for r in s.ranges:
        low, low_open = _relative(r.low, r.searched_low, r.current)
        high, high_open = _relative(r.high, r.searched_high, r.current)
        rows.append((r, low, high, low_open, high_open))
    return sorted(rows, key=lambda row: (row[2] - row[1], row[0].parameter))


# A search up to 10x the current price would flatten every other bar: ends beyond ±200%
# are drawn at the cap (the table gives them in full).
TORNADO_CAP_PCT = 200.0


def tornado_chart(s: Sensitivity) -> str | None:
    """How far each price or assumption may move (as % of its current value) with the plan
    unchanged; solid where the plan switches just beyond, pale where the search ended first."""
    if not available() or not s.ranges:
        return None
    rows = tornado_rows(s)[::-1]  # matplotlib draws the first bar at the bottom
    fig = new_figure(7.5, 0.6 + 0.35 * len(rows))
    ax = fig.subplots()
    names = [textwrap.shorten(r.parameter, 48, placeholder="…") for r, *_ in rows]
    for y, (_r, low, high, low_open, high_open) in enumerate(rows):
        low, high = max(low, -TORNADO_CAP_PCT), min(high, TORNADO_CAP_PCT)
        ax.barh(y, -low if low < 0 else 0, left=low, color="#fdae6b" if low_open else "#e6550d")
        ax.barh(y, high, left=0, color="#9ecae1" if high_open else "#3182bd")
    ax.set_yticks(range(len(rows)), names, fontsize=8)
    ax.axvline(0, color="#333333", linewidth=0.8)
    ax.set_xlabel(f"% change with the plan unchanged (cut at ±{TORNADO_CAP_PCT:g}%)")
    ax.spines[["top", "right"]].set_visible(False)
    return svg_of(fig, "tornado")


# The payment schedule's kinds, in stacking order, with their colours.
PAYMENT_KINDS = (
    ("capex", "purchases", "#08519c"),
    ("rent", "rack rent and bandwidth", "#6baed6"),
    ("energy", "energy", "#fd8d3c"),
    ("cloud", "cloud rental", "#74c476"),
    ("other", "other", "#bdbdbd"),
)


def payment_chart(
    months: list[PaymentMonth],
    currency: str,
    rental_months: list[float] | None = None,
    payback_month: int | None = None,
) -> str | None:
    """Cumulative spend month by month, stacked by kind, against the cheapest all-rental
    plan's cumulative spend (dashed) and the payback month. None without matplotlib or
    without months."""
    if not available() or not months:
        return None
    fig = new_figure(7.5, 3.2)
    ax = fig.subplots()
    x = [m.month for m in months]
    stacks, labels, colours = [], [], []
    for key, label, colour in PAYMENT_KINDS:
        values = [getattr(m, key) for m in months]
        if any(values):
            stacks.append(cumulative(values))
            labels.append(label)
            colours.append(colour)
    ax.stackplot(x, *stacks, labels=labels, colors=colours, step="post", alpha=0.9)
    if rental_months:
        ax.step(
            x,
            cumulative(rental_months),
            where="post",
            color="#333333",
            linestyle="--",
            linewidth=1.2,
            label="cheapest all-rental plan",
        )
    if payback_month is not None:
        ax.axvline(payback_month, color="#e6550d", linewidth=1.0)
        # At the top of the axes, on white: at the bottom the label sat on the stacked
        # areas and read poorly; beside the line on the side with more room.
        late = payback_month > 0.7 * max(x, default=1)
        ax.annotate(
            f"pays back, month {payback_month}",
            (payback_month, 1),
            xycoords=("data", "axes fraction"),
            xytext=(-5 if late else 5, -5),
            textcoords="offset points",
            ha="right" if late else "left",
            va="top",
            fontsize=8,
            color="#a63603",
            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "#e6550d", "lw": 0.6},
        )
    ax.set_xlim(1, max(x) + 1 if len(x) > 1 else 2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("month (1 = purchase)")
    ax.set_ylabel(f"cumulative spend ({currency})")
    ax.yaxis.set_major_formatter(thousands_formatter())
    ax.yaxis.set_major_locator(few_ticks())
    # Below the axes: inside, it would cover the first months' rise.
    fig.legend(loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return svg_of(fig, "payments")


def capacity_chart(rows: list[tuple[str, float, str]]) -> str | None:
    """Per workload, the share of its deployment's capacity the demand takes (time per run
    against the deadline, or target tokens/s against tokens/s deployed), labelled with the
    figures; 100% is the limit. `rows`: (workload, share, label)."""
    if not available() or not rows:
        return None
    fig = new_figure(7.0, 0.6 + 0.4 * len(rows))
    ax = fig.subplots()
    shown = rows[::-1]
    for y, (_w, share, label) in enumerate(shown):
        colour = "#e6550d" if share > 1 else "#3182bd"
        bar = ax.barh(y, share * 100, color=colour, edgecolor="#333333", linewidth=0.5)
        ax.bar_label(bar, [label], padding=3, fontsize=7)
    ax.axvline(100, color="#333333", linewidth=1.0, linestyle="--")
    ax.set_yticks(range(len(shown)), [textwrap.shorten(w, 24, placeholder="…") for w, *_ in shown])
    ax.set_xlim(0, max(150.0, max(share for _, share, _ in rows) * 100 * 1.9))
    ax.set_xlabel("% of the deployment's capacity the demand uses (100% = the limit)")
    ax.spines[["top", "right"]].set_visible(False)
    return svg_of(fig, "capacity")


# A cost or time axis spans this ratio or more (largest over smallest point): drawn from
# zero, the cheap points would sit within a tenth of the axis, on top of it; a log scale
# shows them apart, and says so on the axis.
LOG_RATIO = 10.0
# Where a point's number may go, in points from the marker: right and above first, then
# around it, then further out.
LABEL_OFFSETS = (
    (6, 4),
    (6, -12),
    (-14, 4),
    (-14, -12),
    (6, 16),
    (6, -24),
    (-14, 16),
    (-14, -24),
    (18, 4),
    (18, -12),
    (-26, 4),
    (-26, -12),
    (6, 28),
    (6, -36),
)
MARKER_PX = 5.0  # half the width of a marker's box, pixels


def frontier_figure(f: Frontier, from_zero: bool = True) -> Figure:
    """TCO against the longest time to train, one numbered marker per non-dominated plan
    (the number is the table's row: what it asked and buys are there, not on the chart, so
    labels stay short). Each number goes to the first place around its marker that overlaps
    no other number and no marker. Axes start at zero unless `from_zero` is False (a 2%
    difference in cost looks like one), or the points span LOG_RATIO or more on an axis:
    then that axis is logarithmic, so the cheap points do not sit on it."""
    fig = new_figure(8.0, 5.0)
    ax = fig.subplots()
    numbered = list(enumerate(f.points, start=1))  # numbered in the table's order
    times = [p.makespan_h for p in f.points]
    costs = [p.tco for p in f.points]
    ax.plot(times, costs, color="#3182bd", marker="o", linewidth=0, markersize=5)
    x_log = from_zero and _spans(times)
    y_log = from_zero and _spans(costs)
    if x_log:
        ax.set_xscale("log")
        ax.margins(x=0.15)
    elif from_zero:
        ax.set_xlim(left=0, right=max(times) * 1.15 if times else 1)
    if y_log:
        ax.set_yscale("log")
        ax.margins(y=0.15)
    elif from_zero:
        ax.set_ylim(bottom=0, top=max(costs) * 1.15 if costs else 1)
    if not from_zero:
        ax.margins(x=0.15, y=0.2)
    ax.set_xlabel("longest time to train (h)" + (", log scale" if x_log else ""))
    ax.set_ylabel(f"TCO over {f.horizon_months} months ({f.currency})" + (", log" if y_log else ""))
    if not y_log:
        ax.yaxis.set_major_formatter(thousands_formatter())
    if not x_log:
        ax.xaxis.set_major_formatter(thousands_formatter())
    ax.set_title("Cost ↔ time frontier (numbers: the table's rows)", fontsize=10)
    ax.grid(True, color="#dddddd", linewidth=0.5)
    ax.spines[["top", "right"]].set_visible(False)
    place_labels(fig, ax, [(str(n), p.makespan_h, p.tco) for n, p in numbered])
    return fig


def _spans(values: list[float]) -> bool:
    low = min(values, default=0.0)
    return low > 0 and max(values) / low >= LOG_RATIO


def place_labels(fig: Figure, ax: Any, labels: list[tuple[str, float, float]]) -> None:
    """Each (text, x, y) next to its point where it overlaps no label placed before and no
    marker; the last place tried when none is free."""
    from matplotlib.transforms import Bbox

    renderer = drawn(fig)  # the layout settles before anything is measured
    to_px = ax.transData
    taken = [
        Bbox.from_extents(px - MARKER_PX, py - MARKER_PX, px + MARKER_PX, py + MARKER_PX)
        for px, py in (to_px.transform((x, y)) for _, x, y in labels)
    ]
    for text, x, y in labels:
        note = None
        for dx, dy in LABEL_OFFSETS:
            if note is not None:
                note.remove()
            note = ax.annotate(
                text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=8
            )
            box = note.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in taken):
                break
        assert note is not None
        taken.append(note.get_window_extent(renderer))


def drawn(fig: Figure) -> Any:
    """The figure drawn on an Agg canvas; its renderer, to measure text with."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas: Any = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def label_boxes(fig: Figure) -> list[tuple[str, Any]]:
    """Each label of a frontier chart and its box in pixels, after the figure is drawn."""
    renderer = drawn(fig)
    ax = fig.axes[0]
    return [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]


def frontier_chart(f: Frontier, from_zero: bool = True) -> str | None:
    if not available() or not f.points:
        return None
    return svg_of(frontier_figure(f, from_zero), "frontier")


PLOT_SUFFIXES = (".svg", ".png")


def write_frontier_plot(f: Frontier, path: Path, from_zero: bool = True) -> bytes:
    """The frontier chart as SVG or PNG bytes, by the file's suffix (the caller writes them
    atomically)."""
    import matplotlib

    fig = frontier_figure(f, from_zero)
    buf = io.BytesIO()
    fmt = path.suffix.lower().lstrip(".")
    with _quiet_glyphs(), matplotlib.rc_context(_rc("frontier")):
        fig.savefig(
            buf,
            format=fmt,
            dpi=150,
            metadata={"Date": None} if fmt == "svg" else {"Software": None},
        )
    return buf.getvalue()
