"""Build the wheel, install it away from the checkout, run it from another directory.

Installed with --no-deps into a target folder and run with this interpreter (which has the
dependencies), so the test checks what the wheel ships without downloading anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("gpusolve-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("catalog", "rules", "schemas", "examples"):
        assert any(n.startswith(f"gpusolve/_data/{folder}/") for n in names), folder
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    return target


def run_installed(target: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    return subprocess.run(
        [sys.executable, "-m", "gpusolve", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


def test_installed_wheel_finds_its_data(installed: Path, tmp_path: Path) -> None:
    probe = run_installed(
        installed, tmp_path, "catalog", "list", "--kind", "cards", "--format", "json"
    )
    assert probe.returncode == 0, probe.stderr
    assert len(json.loads(probe.stdout)["cards"]) >= 17
    result = run_installed(installed, tmp_path, "catalog", "validate")
    assert result.returncode == 0, result.stderr
    assert "cards" in result.stdout
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gpusolve, gpusolve.load.data as d; "
            "print(gpusolve.__file__); print(d.data_dir('catalog'))",
        ],
        cwd=tmp_path,
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "PYTHONPATH": str(installed),
        },
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(str(installed) in line for line in where), where


def test_console_script_is_declared(installed: Path) -> None:
    entry = next(installed.glob("gpusolve-*.dist-info")) / "entry_points.txt"
    assert "gpusolve = gpusolve.cli:main" in entry.read_text()


def test_installed_wheel_renders_an_html_report(installed: Path, tmp_path: Path) -> None:
    # The report's templates are package data: an installed gpusolve must find them.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gpusolve.report.html as h; from gpusolve.models.frontier import Frontier; "
            "print(h.__file__); "
            "print('<table id=\"frontier\">' in h.frontier_html("
            "Frontier(currency='CNY', horizon_months=12, points=[])))",
        ],
        cwd=tmp_path,
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "PYTHONPATH": str(installed),
        },
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    where, found = probe.stdout.split()
    assert str(installed) in where and found == "True"
