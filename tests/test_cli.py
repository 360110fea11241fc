"""The command line as a user meets it: help, version, usage errors, objectives, top-k."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.shipped import ROOT

from gpusolve import __version__

EXAMPLE = str(ROOT / "examples" / "south-latency-north-batch.yaml")


def test_help_does_not_import_ortools() -> None:
    # Start-up must stay fast: the solver is imported only by the commands that solve.
    probe = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpusolve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Commands" in probe.stdout and "plan" in probe.stdout
    imported = probe.stderr
    assert "ortools" not in imported and "celpy" not in imported and "pandas" not in imported


def test_loading_a_run_does_not_import_ortools() -> None:
    """The solver is imported by the stages that solve, not by the loaders `estimate`,
    `rules explain` and every command share (`plan.inputs`), nor by `plan`'s options: a
    command that only loads and sizes never pays for it, and `plan` imports it inside its
    interruptible solve, where Ctrl-C is answered (an ortools import cut by Ctrl-C fails
    as an ImportError)."""
    code = (
        "import sys\n"
        "import gpusolve.plan.inputs, gpusolve.plan.solved, gpusolve.runs.estimate\n"
        "from pathlib import Path\n"
        "from gpusolve.runs.plan import PlanRequest, plan_options\n"
        "plan_options(PlanRequest(Path('r.yaml'), (), ()))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'ortools', 'numpy'}))\n"
    )
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]"


def test_version(gpusolve) -> None:
    result = gpusolve("--version")
    assert result.code == 0 and __version__ in result.out


def test_unknown_command_is_a_usage_error(gpusolve) -> None:
    result = gpusolve("plna", "x.yaml")
    assert result.code == 2
    assert "Traceback" not in result.err


def test_missing_requirements_file(gpusolve, tmp_path: Path) -> None:
    result = gpusolve("plan", str(tmp_path / "nope.yaml"))
    assert result.code == 2 and "no such file" in result.err


def test_top_k_gives_distinct_plans_in_cost_order(gpusolve) -> None:
    result = gpusolve("plan", "-q", EXAMPLE, "--top-k", "3", "--format", "json")
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    alternatives = plan["alternatives"]
    assert 1 <= len(alternatives) <= 3
    deltas = [a["delta"] for a in alternatives]
    assert deltas == sorted(deltas) and deltas[0] >= 0

    def key(deps: list[dict[str, object]]) -> set[tuple[object, ...]]:
        return {(d["workload"], d["server"] or d["cloud_offer"], d["site"]) for d in deps}

    seen = [key(plan["deployments"])]
    for alt in alternatives:
        assert key(alt["deployments"]) not in seen  # differs in some card/server or site
        seen.append(key(alt["deployments"]))


def test_objectives_change_what_is_minimised(gpusolve) -> None:
    def cost(*extra: str) -> dict[str, float]:
        result = gpusolve("plan", "-q", EXAMPLE, "--format", "json", *extra)
        assert result.code == 0, result.err
        c: dict[str, float] = json.loads(result.out)["cost"]
        return c

    def spend(c: dict[str, float]) -> float:
        # min-capex counts cloud rental as spend, or renting would look free (solve.primary).
        parts: dict[str, float] = c["breakdown"]  # type: ignore[assignment]
        return parts["servers_capex"] + parts["cloud_rental"]

    tco, capex = cost(), cost("--objective", "min-capex")
    assert spend(capex) <= spend(tco)
    assert tco["tco"] <= capex["tco"]


def test_max_throughput_needs_a_budget(gpusolve) -> None:
    result = gpusolve("plan", "-q", EXAMPLE, "--objective", "max-throughput")
    assert result.code == 2 and "needs a budget" in result.err


def test_max_throughput_spends_the_budget_on_speed(gpusolve) -> None:
    # More budget never buys less throughput.
    def throughput(capex: str) -> float:
        result = gpusolve(
            "plan",
            "-q",
            EXAMPLE,
            "--format",
            "json",
            "--objective",
            "max-throughput",
            "--capex-max",
            capex,
        )
        assert result.code == 0, result.err
        return sum(d["throughput"] for d in json.loads(result.out)["deployments"])

    assert throughput("3000000") >= throughput("1000000")
