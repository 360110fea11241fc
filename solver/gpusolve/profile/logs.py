"""Read `nvidia-smi dmon` and `nvidia-smi --query-gpu=... --format=csv` logs into samples.

Both readers are driven by the log's own header lines, never by fixed positions:

dmon (`nvidia-smi dmon -s pucvmet -d 1`, optionally `-o DT`) prints a block of two comment
lines, then one line per GPU per cycle; the block repeats (every screenful, and on every
restart), and GPUs interleave:

    #Date       Time        gpu    pwr  gtemp  mtemp     sm    mem ...   mclk   pclk ...
    #YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      % ...    MHz    MHz ...
     20240510   12:00:01      0    312     61     70     98     31 ...   2619   1980 ...

The first comment line names the columns (`gpu` is always there; `-o D`/`-o T` add `Date` and
`Time`; driver 525+ says `gtemp`/`mtemp` where older drivers said `temp`; `-s` selects which
groups appear), the second gives their units (`Idx`, `W`, `C`, `%`, `MHz`, `MB`, `bool`,
`errs`, `MB/s`). A metric the device does not report is `-`. The layout follows the
nvidia-smi(1) manual page ("Device Monitoring") and dmon output pasted in public issues
(mozilla/DeepSpeech#178: `-s pucvmet` on driver 375-era Tesla boards).

CSV (`nvidia-smi --query-gpu=timestamp,index,utilization.gpu,... --format=csv -l 1`) has a
header line naming each field with its unit in brackets (`utilization.gpu [%]`, `memory.used
[MiB]`, `clocks.sm [MHz]`) and values that repeat the unit (`98 %`, `40536 MiB`); missing
values are `[N/A]` or `N/A` (hakandundar34coding/system-monitoring-center#57 shows one).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from datetime import datetime

from gpusolve.errors import InputError, Problem

# Canonical metric names (units in the name) for the columns we summarise.
DMON_COLUMNS: dict[str, str] = {
    "pwr": "power_w",
    "temp": "gpu_temp_c",  # drivers before 525
    "gtemp": "gpu_temp_c",
    "mtemp": "memory_temp_c",
    "sm": "sm_pct",
    "mem": "mem_pct",
    "mclk": "mem_clock_mhz",
    "pclk": "sm_clock_mhz",
    "pviol": "power_violation_pct",
    "tviol": "thermal_violation",
    "fb": "fb_used_mib",
    "rxpci": "pcie_rx_mbs",
    "txpci": "pcie_tx_mbs",
}

# `--query-gpu` field names (and their older/newer spellings) to the same canonical names.
CSV_FIELDS: dict[str, str] = {
    "utilization.gpu": "sm_pct",
    "utilization.memory": "mem_pct",
    "memory.used": "fb_used_mib",
    "memory.total": "fb_total_mib",
    "power.draw": "power_w",
    "power.draw.instant": "power_w",
    "power.draw.average": "power_w",
    "power.limit": "power_limit_w",
    "enforced.power.limit": "power_limit_w",
    "temperature.gpu": "gpu_temp_c",
    "temperature.memory": "memory_temp_c",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.gr": "sm_clock_mhz",
    "clocks.current.graphics": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.current.memory": "mem_clock_mhz",
}
# Clock-event ("throttle") reasons: `Active` counts as a violation sample of that kind.
CSV_THERMAL_REASONS = ("hw_thermal_slowdown", "sw_thermal_slowdown")
CSV_POWER_REASONS = ("sw_power_cap", "hw_power_brake_slowdown")

# What each figure can be, and why. A utilisation is a share of the sampling period; a draw
# or a limit is never negative, and no GPU draws 10 kW (the largest boards are rated about
# 1.2-1.4 kW: B200 1 kW, GB300 1.4 kW); clocks and memory are never negative. A log
# outside these was edited or mis-parsed (999% SM use, negative power).
RANGES: dict[str, tuple[float, float, str]] = {
    "sm_pct": (0.0, 100.0, "a utilisation is a share of the time, 0-100%"),
    "mem_pct": (0.0, 100.0, "a utilisation is a share of the time, 0-100%"),
    "power_violation_pct": (0.0, 100.0, "a share of the time, 0-100%"),
    "power_w": (0.0, 10_000.0, "a GPU's draw is 0-10,000 W (the largest boards: ~1.4 kW)"),
    "power_limit_w": (0.0, 10_000.0, "a GPU's power limit is 0-10,000 W"),
    "sm_clock_mhz": (0.0, math.inf, "a clock is never negative"),
    "mem_clock_mhz": (0.0, math.inf, "a clock is never negative"),
    "fb_used_mib": (0.0, math.inf, "memory in use is never negative"),
    "fb_total_mib": (0.0, math.inf, "a memory size is never negative"),
}

# A broken log reports this many problems at most: enough to see the pattern, never a flood.
MAX_PROBLEMS = 12
MISSING = frozenset({"-", "N/A", "[N/A]", "[Not Supported]", "Not Supported", ""})


@dataclass(frozen=True)
class Sample:
    """One GPU at one monitoring cycle: canonical metric -> value (None: not reported)."""

    gpu: str
    line: int
    time_s: float | None
    values: dict[str, float | None]


@dataclass
class Log:
    """What a log held: its format, the samples in file order, what was skipped."""

    name: str
    format: str  # "dmon" | "csv"
    columns: tuple[str, ...]
    samples: list[Sample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_log(text: str, name: str) -> Log:
    """Parse either format (told apart by its first meaningful line); raise InputError with
    the line number for anything that cannot be read."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if not first:
        raise InputError.single(
            name, "the log is empty", hint="give nvidia-smi dmon or --format=csv output"
        )
    if first.startswith("#"):
        return read_dmon(text, name)
    if "," in first:
        return read_csv(text, name)
    raise InputError.single(
        name,
        "neither an nvidia-smi dmon log (it starts with a '# gpu ...' header) nor a "
        "--format=csv log (comma-separated with a header line)",
        line=1 + _leading_blank_lines(text),
        hint="record with `nvidia-smi dmon -s pucvmet -o DT -d 1` or "
        "`nvidia-smi --query-gpu=timestamp,index,utilization.gpu,... --format=csv -l 1`",
    )


def _leading_blank_lines(text: str) -> int:
    n = 0
    for ln in text.splitlines():
        if ln.strip():
            break
        n += 1
    return n


# --------------------------------------------------------------------------- dmon


def _is_column_line(tokens: list[str]) -> bool:
    return "gpu" in (t.lower() for t in tokens)


def read_dmon(text: str, name: str) -> Log:
    lines = text.splitlines()
    columns: list[str] | None = None
    log = Log(name=name, format="dmon", columns=())
    problems: list[Problem] = []
    for number, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            tokens = stripped.lstrip("#").split()
            if _is_column_line(tokens):
                columns = [t.lower() for t in tokens]
                if not log.columns:
                    log.columns = tuple(columns)
            elif (
                columns is not None
                and "idx" in (t.lower() for t in tokens)
                and len(tokens) != len(columns)
            ):
                problems.append(
                    Problem(
                        name,
                        number,
                        1,
                        f"the units line has {len(tokens)} fields for {len(columns)} columns",
                        "give the log as nvidia-smi printed it",
                    )
                )
            continue
        if columns is None:
            problems.append(
                Problem(
                    name,
                    number,
                    1,
                    "a data line before any '# gpu ...' header line",
                    "keep the header lines nvidia-smi dmon prints (do not strip comments)",
                )
            )
            break
        tokens = stripped.split()
        if len(tokens) != len(columns):
            last = number == _last_nonblank(lines)
            if last and len(tokens) < len(columns):
                # A log cut off mid-line (the monitor was killed): drop the partial cycle.
                log.notes.append(f"line {number} is cut short and was ignored")
                continue
            problems.append(
                Problem(
                    name,
                    number,
                    1,
                    f"{len(tokens)} fields where the header above names {len(columns)} "
                    f"({' '.join(columns)})",
                    "give the log as nvidia-smi printed it, one line per GPU per cycle",
                )
            )
            continue
        sample = _dmon_sample(columns, tokens, name, number, problems)
        if sample is not None:
            log.samples.append(sample)
        if len(problems) >= MAX_PROBLEMS:
            break
    return _finished(log, problems, name, "the log has headers but no data lines")


def _last_nonblank(lines: list[str]) -> int:
    for i in range(len(lines), 0, -1):
        if lines[i - 1].strip():
            return i
    return 0


def _dmon_sample(
    columns: list[str], tokens: list[str], name: str, number: int, problems: list[Problem]
) -> Sample | None:
    cells = dict(zip(columns, tokens, strict=True))
    gpu = cells["gpu"]
    values: dict[str, float | None] = {}
    for col, canon in DMON_COLUMNS.items():
        if col not in cells:
            continue
        value = _number(cells[col])
        wrong = "not a number or '-'" if value is _BAD else _out_of_range(canon, value)
        if wrong is not None:
            column = columns.index(col) + 1
            problems.append(
                Problem(
                    name,
                    number,
                    _column_of(tokens, column),
                    f"{col} is {cells[col]!r}, {wrong}",
                    "give the log as nvidia-smi printed it",
                )
            )
            return None
        values[canon] = value if isinstance(value, float) else None
    time_s = None
    if "time" in cells:
        stamp = f"{cells.get('date', '19700101')} {cells['time']}"
        try:
            time_s = datetime.strptime(stamp, "%Y%m%d %H:%M:%S").timestamp()
        except ValueError:
            problems.append(
                Problem(
                    name,
                    number,
                    1,
                    f"date/time {stamp!r} is not YYYYMMDD HH:MM:SS",
                    "give the log as `nvidia-smi dmon -o DT` printed it",
                )
            )
            return None
    return Sample(gpu=gpu, line=number, time_s=time_s, values=values)


def _column_of(tokens: list[str], index: int) -> int:
    """1-based character column of the index-th (1-based) token, approximately: tokens are
    separated by runs of spaces, so count the joined width."""
    return 1 + sum(len(t) + 1 for t in tokens[: index - 1])


class _Bad:
    pass


_BAD = _Bad()


def _number(cell: str) -> float | _Bad | None:
    text = cell.strip()
    if text in MISSING:
        return None
    try:
        value = float(text)
    except ValueError:
        return _BAD
    return value if math.isfinite(value) else _BAD


def _out_of_range(canon: str, value: float | _Bad | None) -> str | None:
    """Why a parsed figure cannot be what the log says it is (`RANGES`), or None."""
    if not isinstance(value, float) or canon not in RANGES:
        return None
    low, high, why = RANGES[canon]
    return None if low <= value <= high else f"out of range: {why}"


# --------------------------------------------------------------------------- csv


def _field_name(header: str) -> tuple[str, str | None]:
    """`memory.used [MiB]` -> ("memory.used", "MiB")."""
    head = header.strip()
    if head.endswith("]") and "[" in head:
        base, unit = head[:-1].rsplit("[", 1)
        return base.strip().lower(), unit.strip()
    return head.lower(), None


def read_csv(text: str, name: str) -> Log:
    rows = list(csv.reader(io.StringIO(text)))
    header_at = next(i for i, r in enumerate(rows) if any(c.strip() for c in r))
    header = [_field_name(h) for h in rows[header_at]]
    names = [h[0] for h in header]
    if "index" not in names and "pci.bus_id" not in names and "uuid" not in names:
        # Field names never start with a digit; values (indices, timestamps) do.
        if any(c.strip()[:1].isdigit() for c in rows[header_at]):
            hint = "record without `noheader`: the header line names the fields"
        else:
            hint = "add `index` to --query-gpu so samples can be told apart per GPU"
        raise InputError.single(
            name,
            "the CSV header names no GPU (index, pci.bus_id or uuid)",
            line=1 + header_at,
            hint=hint,
        )
    log = Log(name=name, format="csv", columns=tuple(names))
    problems: list[Problem] = []
    gpu_key = next(k for k in ("index", "pci.bus_id", "uuid") if k in names)
    for offset, row in enumerate(rows[header_at + 1 :], start=header_at + 2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(names):
            if offset == header_at + 1 + len(rows[header_at + 1 :]) and len(row) < len(names):
                log.notes.append(f"line {offset} is cut short and was ignored")
                continue
            problems.append(
                Problem(
                    name,
                    offset,
                    1,
                    f"{len(row)} fields where the header names {len(names)}",
                    "give the log as nvidia-smi printed it (a repeated header starts a new "
                    "block only in dmon logs)",
                )
            )
            continue
        if [_field_name(c)[0] for c in row] == names:
            continue  # a repeated header (two recordings concatenated)
        sample = _csv_sample(names, row, gpu_key, name, offset, problems)
        if sample is not None:
            log.samples.append(sample)
        if len(problems) >= MAX_PROBLEMS:
            break
    return _finished(log, problems, name, "the log has a header but no data lines")


def _csv_sample(
    names: list[str], row: list[str], gpu_key: str, name: str, number: int, problems: list[Problem]
) -> Sample | None:
    cells = {n: c.strip() for n, c in zip(names, row, strict=True)}
    values: dict[str, float | None] = {}
    for field_name, cell in cells.items():
        canon = CSV_FIELDS.get(field_name)
        if canon is None:
            continue
        value = _number(cell.split()[0] if cell and cell not in MISSING else cell)
        wrong = "not a number" if value is _BAD else _out_of_range(canon, value)
        if wrong is not None:
            column = 1 + sum(len(c) + 1 for c in row[: names.index(field_name)])
            problems.append(
                Problem(
                    name,
                    number,
                    column,
                    f"{field_name} is {cell!r}, {wrong}",
                    "give the log as nvidia-smi --format=csv printed it",
                )
            )
            return None
        if values.get(canon) is None:
            values[canon] = value if isinstance(value, float) else None
    thermal = _reasons(cells, CSV_THERMAL_REASONS)
    power = _reasons(cells, CSV_POWER_REASONS)
    if thermal is not None:
        values["thermal_violation"] = thermal
    if power is not None:
        values["power_violation_pct"] = 100.0 * power
    time_s = None
    if "timestamp" in cells and cells["timestamp"] not in MISSING:
        time_s = _csv_time(cells["timestamp"])
        if time_s is None:
            problems.append(
                Problem(
                    name,
                    number,
                    1,
                    f"timestamp {cells['timestamp']!r} is not YYYY/MM/DD HH:MM:SS.mmm",
                    "give the log as nvidia-smi --format=csv printed it",
                )
            )
            return None
    return Sample(gpu=cells[gpu_key], line=number, time_s=time_s, values=values)


def _reasons(cells: dict[str, str], kinds: tuple[str, ...]) -> float | None:
    seen: float | None = None
    for prefix in ("clocks_throttle_reasons.", "clocks_event_reasons."):
        for kind in kinds:
            cell = cells.get(prefix + kind)
            if cell is None or cell in MISSING:
                continue
            active = 1.0 if cell.lower() == "active" else 0.0
            seen = max(seen or 0.0, active)
    return seen


def _csv_time(stamp: str) -> float | None:
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f"):
        try:
            return datetime.strptime(stamp, fmt).timestamp()
        except ValueError:
            continue
    return None


def _finished(log: Log, problems: list[Problem], name: str, empty: str) -> Log:
    """The log read, or every problem found in it (exit 2, each with its line)."""
    if problems:
        raise InputError(problems)
    if not log.samples:
        raise InputError.single(name, empty, hint="record at least a few cycles")
    return log
