"""The package functions behind the solving commands (`gpusolve.runs`): what each decides
a command shows, and the command modules that only parse, call one of them and deliver."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.factories.files import write_reqs
from tests.support.shipped import ROOT

from gpusolve.optimize import interrupt
from gpusolve.runs.output import BadOption, CommandOutput, OptionConflict, OutputFile

EXAMPLE = ROOT / "examples" / "finetune-7b-deadline.yaml"
CATALOG = (ROOT / "catalog",)
COMMANDS = ROOT / "solver" / "gpusolve" / "commands"


def _request(**changes: Any) -> Any:
    from gpusolve.runs.plan import PlanRequest

    return PlanRequest(EXAMPLE, CATALOG, (), **changes)


def test_a_finished_plan_goes_to_the_output_file_alone(tmp_path: Path) -> None:
    from gpusolve.runs.plan import run_plan

    target = tmp_path / "plan.json"
    result = run_plan(_request(fmt="json", output=target))
    assert result.report.status == "optimal"
    assert result.output.stdout == ""
    assert result.output.exit_code == 0
    (file,) = result.output.files
    assert file.path == target and file.note == f"wrote {target}"
    assert isinstance(file.data, str)
    assert json.loads(file.data)["status"] == "optimal"


def test_no_plan_leaves_the_output_file_and_explains_on_the_terminal(tmp_path: Path) -> None:
    from gpusolve.runs.plan import run_plan

    target = tmp_path / "plan.txt"
    result = run_plan(_request(output=target, capex_max=1.0, monthly_max=1.0, time_limit_s=5))
    assert result.report.status == "infeasible"
    assert result.output.files == ()
    assert result.output.before == (f"no plan: {target} left as it was",)
    assert result.output.stdout  # the explanation
    assert result.output.exit_code == 1


def test_robust_without_scenarios_is_an_option_conflict() -> None:
    from gpusolve.runs.plan import run_plan

    with pytest.raises(OptionConflict, match="--robust needs a scenarios: block"):
        run_plan(_request(robust="worst"))


def test_an_unknown_card_is_a_bad_option() -> None:
    from gpusolve.runs.estimate import EstimateRequest, run_estimate

    with pytest.raises(BadOption) as caught:
        run_estimate(EstimateRequest(EXAMPLE, CATALOG, (), card_ids=("no-such-card",)))
    assert caught.value.option == "--card"
    assert "no-such-card" in str(caught.value)


def test_a_frontier_needs_a_deadline_to_trade(tmp_path: Path, gpusolve: Any) -> None:
    from gpusolve.runs.frontier import FrontierRequest, run_frontier

    data = yaml.safe_load(EXAMPLE.read_text())
    for w in data["workloads"]:
        w.pop("deadline_hours", None)
    reqs = write_reqs(tmp_path, data)
    with pytest.raises(BadOption) as caught:
        run_frontier(FrontierRequest(reqs, CATALOG, ()))
    assert caught.value.option == "REQS.yaml"
    # The command reports it as click reports a bad argument: usage, then the reason, exit 2.
    result = gpusolve("frontier", "-q", str(reqs))
    assert result.code == 2
    assert "Usage: gpusolve frontier" in result.err
    assert "Invalid value for REQS.yaml: no workload has a deadline_hours" in result.err


def test_a_fleet_no_offer_hosts_keeps_the_output_file(tmp_path: Path) -> None:
    from gpusolve.runs.colo import ColoRequest, run_colo

    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump({"servers": [{"server": "hgx-h100-8gpu", "count": 200}]}))
    target = tmp_path / "ranking.json"
    result = run_colo(ColoRequest(fleet, CATALOG, (), fmt="json", output=target))
    assert not any(row.feasible for row in result.report.offers)
    assert result.output.files == ()  # an existing -o keeps its last ranking
    assert json.loads(result.output.stdout)["offers"]  # the reasons, on the terminal
    assert result.output.after == ("no colocation offer can host this fleet",)
    assert result.output.exit_code == 1


def test_interrupted_bom_csv_prints_the_bill_of_materials(
    gpusolve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during `plan --bom --format csv`: the CSV the user asked for (of the best
    plan so far), not the plan as text; the interruption is said on stderr, exit 130."""
    finished = gpusolve("plan", "-q", str(EXAMPLE), "--bom", "--format", "csv")
    assert finished.code == 0, finished.err
    import gpusolve.plan as planner

    real = planner.make_plan

    def make_plan_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        plan = real(*args, **kwargs)
        interrupt.request_stop()
        return plan

    monkeypatch.setattr(planner, "make_plan", make_plan_then_ctrl_c)
    result = gpusolve("plan", str(EXAMPLE), "--bom", "--format", "csv")
    assert result.code == 130, result.err
    assert result.out == finished.out  # the same plan's bill, as CSV
    assert result.out.startswith("section,item,")
    assert "not proven optimal" in result.err


def test_deliver_says_before_prints_writes_then_says_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpusolve.commands.deliver import deliver

    said: list[str] = []
    output = CommandOutput(
        stdout="the table\n",
        files=(OutputFile(tmp_path / "a.txt", "text"), OutputFile(tmp_path / "b.png", b"\x89")),
        before=("first",),
        after=("last",),
        exit_code=3,
    )
    with pytest.raises(SystemExit) as stopped:
        deliver(output, lambda line: said.append(f"{line} | {capsys.readouterr().out!r}"))
    assert stopped.value.code == 3
    assert said == ["first | ''", "last | 'the table\\n'"]
    assert (tmp_path / "a.txt").read_text() == "text"
    assert (tmp_path / "b.png").read_bytes() == b"\x89"


def test_invoke_reports_option_errors_as_click_does_and_delivers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import click

    from gpusolve.commands.deliver import invoke
    from gpusolve.runs.output import RunResult

    def refused(error: Exception) -> Any:
        raise error

    with pytest.raises(click.BadParameter) as bad:
        invoke(lambda: refused(BadOption("--card", "unknown card x")), print)
    assert (bad.value.param_hint, bad.value.message) == ("--card", "unknown card x")
    with pytest.raises(click.UsageError, match="--robust needs"):
        invoke(lambda: refused(OptionConflict("--robust needs a scenarios: block")), print)
    said: list[str] = []
    shown = RunResult("found", CommandOutput(stdout="shown\n", after=("said",)))
    invoke(lambda: shown, said.append)  # exit code 0: no exit
    assert capsys.readouterr().out == "shown\n"
    assert said == ["said"]


SOLVING = ("plan.py", "frontier.py", "colo.py", "estimate.py")
# What a command that only composes never needs: the package function does the loading,
# solving, writing and exiting (`commands.deliver` writes and exits for all of them).
NOT_IN_A_COMMAND = (
    "gpusolve.plan.inputs",
    "gpusolve.plan.single",
    "gpusolve.optimize",
    "gpusolve.atomic",
)


@pytest.mark.parametrize("name", SOLVING)
def test_solving_commands_only_compose(name: str) -> None:
    tree = ast.parse((COMMANDS / name).read_text())
    imported = [
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    ] + [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert not [m for m in imported if m.startswith(NOT_IN_A_COMMAND)], imported
    assert "sys" not in imported  # exit codes come from the package's output
    runs = [m for m in imported if m.startswith("gpusolve.runs.")]
    assert runs == [f"gpusolve.runs.{name.removesuffix('.py')}"]
