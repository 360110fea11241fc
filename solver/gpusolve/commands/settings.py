"""Defaults for the options a team sets once: the catalogues and rule files it adds, and the
market `catalog list` filters for, read from a config file and the environment.

Where a value comes from, first found wins:

1. the command line (`--catalog quotes/`);
2. the environment: `GPUSOLVE_CATALOG` and `GPUSOLVE_RULES` (paths separated by the
   platform's path separator, `:` on Linux), `GPUSOLVE_MARKET`;
3. the project's `gpusolve.toml`: the first one in the current folder or a folder above it;
4. the user's `$XDG_CONFIG_HOME/gpusolve/config.toml` (`~/.config/gpusolve/config.toml`);
5. the shipped default (no extra catalogue or rules; no market filter).

`GPUSOLVE_CONFIG=FILE` names the one config file to read instead of 3 and 4 (empty: none).
A config file holds any of `catalog = ["quotes/", ...]`, `rules = [...]` (paths relative to
the file's folder) and `market = "cn"`; anything else is an error located at the file.
Currency and market for a plan stay in the requirements file, which is the project's
record of what it plans for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

PROJECT_FILE = "gpusolve.toml"
ENV_CONFIG = "GPUSOLVE_CONFIG"
ENV = {"catalog": "GPUSOLVE_CATALOG", "rules": "GPUSOLVE_RULES", "market": "GPUSOLVE_MARKET"}
MARKETS = ("cn", "global")


@dataclass(frozen=True)
class Settings:
    """What the config files set (paths already resolved), and the files read."""

    catalog: tuple[Path, ...] = ()
    rules: tuple[Path, ...] = ()
    market: str | None = None
    read: tuple[Path, ...] = field(default_factory=tuple)


def config_files(cwd: Path, environ: dict[str, str], home: Path) -> list[Path]:
    """The config files to read, the weaker first (the user's, then the project's)."""
    named = environ.get(ENV_CONFIG)
    if named is not None:
        return [Path(named)] if named else []
    base = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    out = [p for p in [base / "gpusolve" / "config.toml"] if p.is_file()]
    for folder in [cwd, *cwd.parents]:
        if (folder / PROJECT_FILE).is_file():
            return [*out, folder / PROJECT_FILE]
    return out


def read_settings(files: list[Path]) -> Settings:
    """The merged settings of `files` (a later file's key replaces an earlier one's)."""
    settings = Settings()
    for path in files:
        values = _parse(path)
        folder = path.parent
        if "catalog" in values:
            settings = replace(settings, catalog=_paths(path, folder, values["catalog"]))
        if "rules" in values:
            settings = replace(settings, rules=_paths(path, folder, values["rules"]))
        if "market" in values:
            settings = replace(settings, market=_market(path, values["market"]))
        settings = replace(settings, read=(*settings.read, path))
    return settings


def _parse(path: Path) -> dict[str, Any]:
    import tomllib

    from gpusolve.errors import InputError

    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError.single(
            str(path), f"cannot read the config file ({exc.strerror})"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError.single(str(path), f"not a TOML file: {exc}") from None
    unknown = sorted(set(values) - set(ENV))
    if unknown:
        raise InputError.single(
            str(path),
            f"unknown key {unknown[0]!r}",
            hint=f"a config file sets {', '.join(ENV)}",
        )
    return values


def _paths(path: Path, folder: Path, value: object) -> tuple[Path, ...]:
    from gpusolve.errors import InputError

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise InputError.single(str(path), "catalog and rules take a path or a list of paths")
    return tuple(folder / Path(v).expanduser() for v in items)


def _market(path: Path, value: object) -> str:
    from gpusolve.errors import InputError

    if value not in MARKETS:
        raise InputError.single(str(path), f"market {value!r} is not one of {', '.join(MARKETS)}")
    return str(value)


def settings() -> Settings:
    """The settings of the config files `config_files` finds from here (read at each
    call: a command asks once per option, and in-process callers may change folder)."""
    return read_settings(config_files(Path.cwd(), dict(os.environ), Path.home()))


def sources() -> list[str]:
    """Where this run's defaults come from, one line each (for `-v`)."""
    lines = [f"config file {p}" for p in settings().read] or ["no config file"]
    lines += [f"{name}={os.environ[name]}" for name in ENV.values() if name in os.environ]
    return lines
