"""Bounds on the counts, demands and money a user writes, each refused with a located
message (file:line, the field, the allowed range) and exit 2, never a traceback, an
internal error or a plan built on nonsense; and rules whose evaluation fails said so at
the rule."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.support.fuzz import EXAMPLES

from gpusolve.load import load_catalog, read_yaml
from gpusolve.load.inventory import inventory_problems
from gpusolve.load.validate import parse_model
from gpusolve.models.requirements import Requirements

Run = Callable[..., Any]

PHASED = """\
currency: CNY
horizon_months: 12
periods:
  length_months: {length}
workloads:
  - name: chat
    kind: inference
    model: {{preset: llama-2-7b}}
    precision: fp16
    target_tokens_per_s: {target}
{demand}
"""


def phased(tmp_path: Path, demand: str, *, length: int = 6, target: str = "300") -> str:
    path = tmp_path / "reqs.yaml"
    path.write_text(PHASED.format(length=length, target=target, demand=demand), encoding="utf-8")
    return str(path)


def refused(result: Any, where: str, *phrases: str) -> None:
    """Exit 2 with one located message: `where` (file:line) and each phrase."""
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err and "internal error" not in result.err
    assert where in result.err, result.err
    for phrase in phrases:
        assert phrase in result.err, result.err
    assert "Input should" not in result.err  # pydantic's own words never reach a reader


# --- demand over periods --------------------------------------------------------------


def test_a_growth_factor_of_1e_minus_300_is_refused_at_its_line(gpusolve: Run, tmp_path: Path):
    demand = "    demand_growth:\n      factor: 1.0e-300\n      every_months: 6"
    result = gpusolve("plan", "-q", phased(tmp_path, demand))
    refused(result, "reqs.yaml:12:15", "demand_growth.factor", "expected at least 0.001")


def test_demand_compounded_past_a_million_times_is_refused(gpusolve: Run, tmp_path: Path):
    # x1000 a month over 12 monthly periods: the last period starts at month 11, so the
    # demand there is 1000^11 = 1e33 times the stated 300 tokens/s.
    demand = "    demand_growth:\n      factor: 1000\n      every_months: 1"
    result = gpusolve("plan", "-q", phased(tmp_path, demand, length=1), "--time-limit", "5")
    refused(result, "reqs.yaml:12:7", "demand reaches 1e+33 times", "between 1e-06 and 1e+06")


def test_a_grown_figure_beyond_its_own_range_is_refused(gpusolve: Run, tmp_path: Path):
    # Doubling every 6 months: the second half-year period serves 2 x 6e11 = 1.2e12
    # tokens/s, beyond the 1e12 any target_tokens_per_s may be.
    demand = "    demand_growth:\n      factor: 2\n      every_months: 6"
    result = gpusolve("plan", "-q", phased(tmp_path, demand, target="6.0e11"))
    refused(result, "reqs.yaml:12:7", "target_tokens_per_s 6e+11 grows to 1.2e+12", "at most 1e+12")


def test_a_demand_figure_of_1e300_is_refused(gpusolve: Run, tmp_path: Path):
    result = gpusolve("plan", "-q", phased(tmp_path, "    demand_by_period: [1, 1.0e300]"))
    refused(result, "reqs.yaml:11:27", "demand_by_period.1", "expected at most 1e+06")


def test_more_demand_figures_than_periods_are_refused_at_the_first_extra(
    gpusolve: Run, tmp_path: Path
) -> None:
    # 12 months in periods of 6: two periods, so figures 3 to 5 would never be read.
    result = gpusolve("plan", "-q", phased(tmp_path, "    demand_by_period: [1, 2, 3, 4, 5]"))
    refused(result, "reqs.yaml:11:30", "demand_by_period.2", "5 demand figures for 2 periods")


def test_as_many_demand_figures_as_periods_are_kept(tmp_path: Path) -> None:
    path = Path(phased(tmp_path, "    demand_by_period: [1, 2]"))
    reqs = parse_model(read_yaml(path), Requirements, "requirements")
    assert reqs.workloads[0].demand_by_period == [1, 2]


def test_a_capex_by_year_of_1e300_is_refused_in_finance_words(gpusolve: Run, tmp_path: Path):
    path = phased(tmp_path, "budget:\n  capex_by_year: [1.0e300]")
    result = gpusolve("plan", "-q", path)
    refused(result, "reqs.yaml:12:19", "budget.capex_by_year.0: 1e+300 is out of range")
    assert "expected at most 1e+15" in result.err


def test_a_finance_share_says_what_a_share_is(gpusolve: Run, tmp_path: Path):
    text = "finance:\n  residual_value: true\n  salvage_fraction: 1"
    result = gpusolve("plan", "-q", phased(tmp_path, text))
    refused(
        result,
        "reqs.yaml:13:21",
        "finance.salvage_fraction: 1 is out of range; expected less than 1 (a share",
    )


# --- regions, models ------------------------------------------------------------------


def test_an_empty_list_of_allowed_regions_is_refused(gpusolve: Run, tmp_path: Path):
    result = gpusolve("plan", "-q", phased(tmp_path, "regions:\n  allowed: []"))
    refused(result, "reqs.yaml:12:12", "regions.allowed", "expected at least 1")


MODEL = """\
workloads:
  - name: w
    kind: inference
    model:
{model}
    target_tokens_per_s: 100
"""


def model_file(tmp_path: Path, model: str) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(MODEL.format(model=model), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("model", "where", "phrase"),
    [
        ("      layers: 4\n      hidden: 1\n      heads: 32", "model.yaml:6:15", "at least 64"),
        (
            "      layers: 4\n      hidden: 4096\n      heads: 30",
            "model.yaml:7:14",
            "hidden (4096) must be a multiple of heads (30)",
        ),
        (
            "      layers: 4\n      hidden: 4096\n      heads: 32\n      kv_heads: 5",
            "model.yaml:8:17",
            "heads (32) must be a multiple of kv_heads (5)",
        ),
        ("      params_b: 1.0e-300", "model.yaml:5:17", "expected at least 0.0001"),
    ],
)
def test_a_model_that_cannot_exist_is_refused(
    gpusolve: Run, tmp_path: Path, model: str, where: str, phrase: str
) -> None:
    refused(gpusolve("estimate", model_file(tmp_path, model)), where, phrase)


def test_a_head_width_given_apart_need_not_divide_hidden(tmp_path: Path) -> None:
    path = Path(
        model_file(
            tmp_path, "      layers: 4\n      hidden: 4096\n      heads: 30\n      head_dim: 128"
        )
    )
    reqs = parse_model(read_yaml(path), Requirements, "requirements")
    assert reqs.workloads[0].model.heads == 30


# --- what a team owns -----------------------------------------------------------------

OWNED = (EXAMPLES / "owned-a800-what-to-add.yaml").read_text(encoding="utf-8")


def owned_file(tmp_path: Path, old: str, new: str) -> str:
    assert old in OWNED
    path = tmp_path / "owned.yaml"
    path.write_text(OWNED.replace(old, new), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("old", "new", "where", "phrase"),
    [
        ("count: 4\n", "count: 1000000\n", "owned.yaml:", "count: 1000000 is out of range"),
        ("racks: 1\n", "racks: 1000000\n", "owned.yaml:", "racks: 1000000 is out of range"),
        ("bought: 2023-06", "bought: yesterday", "owned.yaml:", '"yesterday" is not in the'),
    ],
)
def test_owned_counts_and_dates_are_bounded(
    gpusolve: Run, tmp_path: Path, old: str, new: str, where: str, phrase: str
) -> None:
    refused(gpusolve("plan", "-q", owned_file(tmp_path, old, new)), where, phrase)


def test_owned_servers_beyond_their_sites_racks_are_refused(gpusolve: Run, tmp_path: Path):
    # hgx-a800-8gpu: 6.5 kW, 6U; yancheng-wind-40kw-liquid-ib: 40 kW, 48U racks, 8 for rent,
    # plus the 1 contracted: at most min(40 // 6.5, 48 // 6) = 6 a rack, 9 x 6 = 54 in all.
    # 5,000 fill 5000 / 6 = 833 racks.
    result = gpusolve("plan", "-q", owned_file(tmp_path, "count: 4\n", "count: 5000\n"))
    refused(result, "owned.yaml:", "fill 833 racks, but the site has 9 (1 contracted + 8 for rent)")


@pytest.mark.parametrize(("count", "problems"), [(54, 0), (55, 1)])
def test_the_site_holds_as_many_as_its_racks_fit(tmp_path: Path, count: int, problems: int):
    path = Path(owned_file(tmp_path, "count: 4\n", f"count: {count}\n"))
    doc = read_yaml(path)
    reqs = parse_model(doc, Requirements, "requirements")
    found = inventory_problems(reqs.owned, doc, load_catalog().catalog)
    assert len(found) == problems


# --- catalogue patches ----------------------------------------------------------------


def test_the_same_id_patched_twice_in_one_file_is_refused(gpusolve: Run, tmp_path: Path):
    path = tmp_path / "patch.yaml"
    path.write_text(
        "currency: CNY\npatch:\n  - id: hgx-h100-8gpu\n    price: 2000000\n"
        "  - id: hgx-h100-8gpu\n    price: 3000000\n",
        encoding="utf-8",
    )
    result = gpusolve("catalog", "validate", str(path))
    refused(
        result, "patch.yaml:5:9", "'hgx-h100-8gpu' is patched twice in this file (first at line 3)"
    )


def test_a_patched_price_out_of_range_is_said_in_plain_words(gpusolve: Run, tmp_path: Path):
    path = tmp_path / "patch.yaml"
    path.write_text("currency: CNY\npatch:\n  - id: hgx-h100-8gpu\n    price: -5\n", "utf-8")
    result = gpusolve("catalog", "validate", str(path))
    refused(result, "patch.yaml:4:12", "price: -5 is out of range; expected greater than 0")


# --- rules that cannot be evaluated ---------------------------------------------------

RULE = """\
rules:
  - id: bad
    source: H01
    title: A rule that cannot be evaluated
    when: {when}
    require:
      card: {require}
"""
FINETUNE = str(EXAMPLES / "finetune-7b-deadline.yaml")


def rules_file(tmp_path: Path, when: str, require: str) -> str:
    path = tmp_path / "rules.yaml"
    path.write_text(RULE.format(when=when, require=require), encoding="utf-8")
    return str(path)


def test_a_literal_that_never_converts_is_a_compile_error(gpusolve: Run, tmp_path: Path):
    path = rules_file(tmp_path, '"true"', 'card.memory_gb > int("abc")')
    result = gpusolve("plan", "-q", FINETUNE, "--rules", path)
    refused(result, "rules.yaml:7:", "[rule bad]", "int('abc') can never be evaluated")


def test_a_when_that_fails_at_run_time_stops_the_plan_at_the_rule(gpusolve: Run, tmp_path: Path):
    # Before, the rule silently did not fire and the plan went on without it.
    path = rules_file(tmp_path, "int(workload.name) > 0", "card.memory_gb > 0")
    result = gpusolve("plan", "-q", FINETUNE, "--rules", path, "--time-limit", "5")
    refused(
        result,
        "rules.yaml:5: [rule bad] when: could not be evaluated for workload 'ft-7b'",
        "invalid literal for int()",
    )


def test_a_require_that_fails_at_run_time_is_reported_at_its_line(
    gpusolve: Run, tmp_path: Path
) -> None:
    path = rules_file(tmp_path, '"true"', "card.memory_gb > int(card.id)")
    result = gpusolve("plan", "-q", FINETUNE, "--rules", path, "--time-limit", "5")
    assert result.code == 1, result.err
    assert "could not be evaluated: " in result.out
    assert "rules.yaml:7: invalid literal for int()" in result.out
