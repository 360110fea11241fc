"""`gpusolve profile`: nvidia-smi logs read by their headers, summarised and classified (H11)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.factories.hardware import H100

from gpusolve.errors import InputError
from gpusolve.models.params import Params
from gpusolve.profile import profile, read_log

DATA = Path(__file__).parent / "data" / "dmon"
H100_DT = DATA / "h100_pucvmet_dt.log"  # driver 525+, -s pucvmet -o DT, 2 GPUs, repeated header
V100_LEGACY = DATA / "v100_pucvmet_legacy.log"  # pre-525 columns (temp, no mtemp/jpg/ofa/ccpm)
A100_THROTTLE = DATA / "a100_default_throttling.log"  # plain `nvidia-smi dmon` (-s puc)
L40S_CSV = DATA / "l40s_query_stalled.csv"  # --query-gpu=... --format=csv


def report_of(path: Path, params: Params | None = None, card: Any = None) -> Any:
    return profile(read_log(path.read_text(), path.name), card, params or Params())


@pytest.mark.parametrize(
    ("path", "bound", "gpus"),
    [
        (H100_DT, "compute", 2),
        (V100_LEGACY, "memory_bandwidth", 4),
        (A100_THROTTLE, "compute", 1),
        (L40S_CSV, "stalled", 2),
    ],
)
def test_each_sample_log_is_classified_as_h11_would(path: Path, bound: str, gpus: int) -> None:
    r = report_of(path)
    assert len(r.gpus) == gpus
    assert {p.bound for p in r.gpus} == {bound}
    assert r.overall.bound == bound


def test_the_numbers_are_the_logs_time_weighted_means() -> None:
    r = report_of(H100_DT)
    # 40 one-second cycles per GPU across two header blocks; the first two idle.
    assert [p.samples for p in r.gpus] == [40, 40]
    assert r.gpus[0].seconds == pytest.approx(40.0)
    lines = [ln.split() for ln in H100_DT.read_text().splitlines() if not ln.startswith("#")]
    sm0 = [float(t[6]) for t in lines if t[2] == "0"]
    assert r.gpus[0].sm_pct.mean == pytest.approx(sum(sm0) / len(sm0), abs=1e-3)
    assert r.gpus[0].sm_pct.min == 0 and r.gpus[0].sm_pct.max == 100
    assert r.gpus[0].fb_used_gb.max == pytest.approx(61234 * 2**20 / 1e9, rel=1e-6)
    assert r.format == "dmon" and "gtemp" in r.columns


def test_irregular_intervals_weigh_by_time() -> None:
    text = (
        "#Date     Time        gpu     sm    mem\n"
        "#YYYYMMDD HH:MM:SS    Idx      %      %\n"
        " 20240510 12:00:00      0    100     10\n"
        " 20240510 12:00:03      0      0      0\n"
        " 20240510 12:00:04      0      0      0\n"
    )
    r = profile(read_log(text, "t.log"), None, Params())
    # 100% for 3 s, 0% for 1 s, then 0% for the typical (median) 2 s interval.
    assert r.gpus[0].sm_pct.mean == pytest.approx(300 / 6)


def test_a_throttling_log_yields_the_thermal_and_clock_warnings_h17() -> None:
    r = report_of(A100_THROTTLE)
    assert any("°C" in w and "H17" in w for w in r.warnings)
    assert any("SM clock under load fell" in w for w in r.warnings)
    assert not report_of(H100_DT).warnings


def test_thresholds_are_rule_parameters() -> None:
    assert report_of(H100_DT, Params(profile_compute_sm_min=0.99)).overall.bound == "mixed"
    assert not report_of(
        A100_THROTTLE, Params(thermal_warning_c=95, clock_drop_fraction=0.2)
    ).warnings


def test_memory_pressure_against_the_headroom_h29_and_power_against_tdp() -> None:
    r = report_of(H100_DT, Params(headroom=0.3), card=H100)
    assert any("headroom H29" in w for w in r.warnings)
    assert r.gpus[0].power_of_tdp == pytest.approx(r.gpus[0].power_w.mean / H100.tdp_w, abs=1e-3)
    assert not any("headroom" in w for w in report_of(H100_DT, Params(), card=H100).warnings)


def test_missing_values_are_not_available_not_zero() -> None:
    text = (
        "# gpu   pwr  temp    sm   mem\n"
        "# Idx     W     C     %     %\n"
        "    0     -    50    80     -\n"
    )
    r = profile(read_log(text, "t.log"), None, Params())
    assert r.gpus[0].power_w.mean is None and r.gpus[0].mem_pct.mean is None
    assert r.gpus[0].sm_pct.mean == 80


def test_reordered_columns_read_the_same() -> None:
    lines = V100_LEGACY.read_text().splitlines()
    order = [0, 4, 3, 1, 2, *range(5, len(lines[0].split()) - 1)]  # sm/mem/pwr/temp swapped

    def permute(line: str) -> str:
        hash_ = line.startswith("#")
        tokens = line.lstrip("#").split()
        out = " ".join(tokens[i] for i in order)
        return ("# " if hash_ else "  ") + out

    swapped = "\n".join(permute(ln) for ln in lines)
    a = report_of(V100_LEGACY)
    b = profile(read_log(swapped, "swapped.log"), None, Params())
    assert b.overall.sm_pct == a.overall.sm_pct and b.overall.mem_pct == a.overall.mem_pct
    assert b.overall.power_w == a.overall.power_w


def test_out_of_order_timestamps_are_sorted_with_a_note() -> None:
    lines = H100_DT.read_text().splitlines()
    head, body = lines[:2], [ln for ln in lines if not ln.startswith("#")]
    text = "\n".join(head + body[10:] + body[:10])
    r = profile(read_log(text, "r.log"), None, Params())
    assert any("out of time order" in n for n in r.notes)
    assert r.overall.sm_pct == report_of(H100_DT).overall.sm_pct


def test_a_log_cut_off_mid_line_drops_the_partial_cycle() -> None:
    text = V100_LEGACY.read_text().rstrip("\n") + "\n    0   228    74    60"
    r = profile(read_log(text, "cut.log"), None, Params())
    assert r.gpus[0].samples == 30
    assert any("cut short" in n for n in r.notes)


def problems_of(text: str) -> list[tuple[int | None, int | None, str]]:
    with pytest.raises(InputError) as err:
        read_log(text, "bad.log")
    return [(p.line, p.column, p.message) for p in err.value.problems]


def test_malformed_logs_are_refused_with_their_line() -> None:
    good = V100_LEGACY.read_text().splitlines()
    # a short line in the middle
    broken = [*good[:5], "    0   228    74", *good[5:]]
    assert problems_of("\n".join(broken))[0][0] == 6
    # a word where a number belongs: line and column
    bad = [*good[:3], good[3].replace(" 60 ", " xx ", 1), *good[4:]]
    line, column, message = problems_of("\n".join(bad))[0]
    assert line == 4 and column is not None and column > 1 and "not a number" in message
    # data before any header
    assert problems_of("\n".join(good[2:]))[0][0] == 1
    # neither format
    assert "neither" in problems_of("hello world\n")[0][2]


def test_csv_reads_units_in_headers_and_refuses_noheader() -> None:
    r = report_of(L40S_CSV)
    assert r.format == "csv"
    assert r.gpus[0].fb_used_gb.mean == pytest.approx(30120 * 2**20 / 1e9, abs=1e-3)
    assert r.gpus[0].sm_clock_mhz.max == 2520
    data = L40S_CSV.read_text().splitlines()[1:]
    assert "noheader" in (problems_of("\n".join(data))[0][2] + str(_hint("\n".join(data))))


def _hint(text: str) -> str | None:
    try:
        read_log(text, "x.csv")
    except InputError as exc:
        return exc.problems[0].hint
    return None


def test_cli_text_json_and_exit_2(gpusolve: Callable[..., Any], tmp_path: Path) -> None:
    ok = gpusolve("profile", str(A100_THROTTLE), "--card", "a100-80gb-sxm")
    assert ok.code == 0 and "compute" in ok.out and "warning:" in ok.out and "of TDP" in ok.out
    js = gpusolve("profile", str(L40S_CSV), "--format", "json")
    assert js.code == 0 and json.loads(js.out)["overall"]["bound"] == "stalled"
    bad = tmp_path / "bad.log"
    bad.write_text("# gpu sm mem\n# Idx % %\n 0 50\n 0 50 50\n")
    out = gpusolve("profile", str(bad))
    assert out.code == 2 and f"{bad}:3:1:" in out.err and "Traceback" not in out.err
    assert gpusolve("profile", str(tmp_path / "none.log")).code == 2
    assert gpusolve("profile", str(L40S_CSV), "--card", "nope").code == 2


def test_cli_param_sets_a_threshold(gpusolve: Callable[..., Any]) -> None:
    hot = gpusolve("profile", str(A100_THROTTLE))
    cool = gpusolve(
        "profile",
        str(A100_THROTTLE),
        "--param",
        "thermal_warning_c=95",
        "--param",
        "clock_drop_fraction=0.2",
    )
    assert "warning:" in hot.out and cool.code == 0 and "warning:" not in cool.out
    bad = gpusolve("profile", str(A100_THROTTLE), "--param", "thermal_warning_c=hot")
    assert bad.code == 2 and "--param" in bad.err
    assert gpusolve("profile", str(A100_THROTTLE), "--param", "nope=1").code == 2


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("     99     28", "    999     28", "sm is '999', out of range: a utilisation is a share"),
        ("    659 ", "   -659 ", "pwr is '-659', out of range: a GPU's draw is 0-10,000 W"),
    ],
)
def test_figures_no_gpu_reports_are_refused_with_their_line(old: str, new: str, says: str) -> None:
    """Issue 39: 999% SM use and a negative power draw were summarised as if real."""
    lines = H100_DT.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if old in line)
    lines[at] = lines[at].replace(old, new, 1)
    line, column, message = problems_of("\n".join(lines))[0]
    assert line == at + 1 and column is not None and says in message


def test_a_csv_utilisation_above_100_percent_is_refused() -> None:
    lines = L40S_CSV.read_text().splitlines()
    at, cell = next(
        (i, c) for i, line in enumerate(lines[1:], 1) for c in line.split(",") if c.endswith(" %")
    )
    lines[at] = lines[at].replace(cell, " 250 %", 1)
    assert "out of range" in problems_of("\n".join(lines))[0][2]
