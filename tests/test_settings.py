"""Defaults a team sets once (`commands/settings.py`): a config file found from the current
folder up, the user's, the environment, the command line over all; every command's help
states its exit codes; -v says where the defaults came from; bash completion works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.shipped import ROOT

from gpusolve.commands.settings import config_files, read_settings
from gpusolve.errors import InputError

COMMANDS = ("plan", "frontier", "estimate", "colo", "catalog", "rules", "schema", "profile")


def _offer_file(path: Path) -> Path:
    """A catalogue file adding one rental offer (the phased example's, in Yancheng)."""
    text = (ROOT / "examples" / "phased" / "catalog.yaml").read_text(encoding="utf-8")
    path.write_text("currency: CNY\n" + text[text.index("cloud_offers:") :], encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a config file, the run started in a folder below it."""
    (tmp_path / "quotes").mkdir()
    _offer_file(tmp_path / "quotes" / "yancheng.yaml")
    (tmp_path / "gpusolve.toml").write_text(
        'market = "cn"\ncatalog = ["quotes"]\n', encoding="utf-8"
    )
    below = tmp_path / "work" / "today"
    below.mkdir(parents=True)
    monkeypatch.chdir(below)
    monkeypatch.delenv("GPUSOLVE_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-user-config"))
    return tmp_path


def test_the_project_file_is_found_from_a_folder_below_and_its_paths_are_its_own(
    project: Path,
) -> None:
    files = config_files(Path.cwd(), dict(os.environ), project / "home")
    assert files == [project / "gpusolve.toml"]
    s = read_settings(files)
    assert s.market == "cn" and s.catalog == (project / "quotes",) and s.rules == ()


def test_the_project_file_overrides_the_users_key_by_key(project: Path) -> None:
    user = project / "no-user-config" / "gpusolve"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('market = "global"\nrules = ["r.yaml"]\n', "utf-8")
    s = read_settings(config_files(Path.cwd(), dict(os.environ), project / "home"))
    assert s.market == "cn"  # the project's
    assert s.rules == (user / "r.yaml",)  # the user's, which the project leaves alone


def test_the_market_default_comes_from_the_file_then_the_environment_then_the_flag(
    gpusolve, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = gpusolve("catalog", "list", "--kind", "servers")
    assert first.code == 0, first.err
    assert first.out.startswith("market cn:")
    monkeypatch.setenv("GPUSOLVE_MARKET", "global")
    assert gpusolve("catalog", "list", "--kind", "servers").out.startswith("market global:")
    flag = gpusolve("catalog", "list", "--kind", "servers", "--market", "cn")
    assert flag.out.startswith("market cn:")


def test_a_catalogue_from_the_file_or_the_environment_is_read(
    gpusolve, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "cloud-8x-a800-yancheng" in gpusolve("catalog", "list", "--kind", "cloud").out
    monkeypatch.setenv("GPUSOLVE_CONFIG", "")
    assert "cloud-8x-a800-yancheng" not in gpusolve("catalog", "list", "--kind", "cloud").out
    monkeypatch.setenv("GPUSOLVE_CATALOG", str(_offer_file(project / "env.yaml")))
    listed = gpusolve("catalog", "list", "--kind", "cloud")
    assert listed.code == 0, listed.err
    assert "cloud-8x-a800-yancheng" in listed.out


def test_a_bad_config_file_is_a_located_error_exit_2(
    gpusolve, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "gpusolve.toml").write_text("catalgo = ['x']\n", encoding="utf-8")
    result = gpusolve("catalog", "list")
    assert result.code == 2
    assert f"{project / 'gpusolve.toml'}: unknown key 'catalgo'" in result.err
    assert "Traceback" not in result.err
    (project / "gpusolve.toml").write_text('market = "eu"\n', encoding="utf-8")
    assert "market 'eu' is not one of cn, global" in gpusolve("catalog", "list").err
    (project / "gpusolve.toml").write_text("market = \n", encoding="utf-8")
    assert "not a TOML file" in gpusolve("catalog", "list").err


def test_gpusolve_config_names_the_one_file_or_none(project: Path) -> None:
    environ = {**os.environ, "GPUSOLVE_CONFIG": ""}
    assert config_files(Path.cwd(), environ, project) == []
    other = project / "other.toml"
    environ["GPUSOLVE_CONFIG"] = str(other)
    assert config_files(Path.cwd(), environ, project) == [other]
    with pytest.raises(InputError):
        read_settings([other])  # named but missing: an error, not silence


def test_verbose_says_where_the_defaults_came_from(
    gpusolve, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSOLVE_RULES", "/nowhere/rules.yaml")
    result = gpusolve("-v", "schema", "plan")
    assert result.code == 0, result.err
    assert f"gpusolve: config file {project / 'gpusolve.toml'}" in result.err
    assert "gpusolve: GPUSOLVE_RULES=/nowhere/rules.yaml" in result.err
    assert "gpusolve:" not in gpusolve("schema", "plan").err


@pytest.mark.parametrize("command", COMMANDS)
def test_every_commands_help_states_its_exit_codes_and_the_catalogue_default(
    gpusolve, command: str
) -> None:
    result = gpusolve(command, "--help")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert "Exit codes: 0" in text
    if "--catalog" in text:
        assert "env var: GPUSOLVE_CATALOG" in text and "gpusolve.toml" in text


def test_bash_completion_completes_the_commands() -> None:
    env = {**os.environ, "_GPUSOLVE_COMPLETE": "bash_complete", "COMP_WORDS": "gpusolve pl"}
    env["COMP_CWORD"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "gpusolve"], env=env, capture_output=True, text=True, check=False
    )
    assert "plain,plan" in done.stdout.replace("\n", ",")
