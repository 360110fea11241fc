"""Helpers for planner tests: shipped data paths and small catalogues built from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
CARDS = ROOT / "catalog" / "cards.yaml"
SERVERS = ROOT / "catalog" / "servers.yaml"
COLO = ROOT / "catalog" / "colo-jiangsu.yaml"
CLOUD = ROOT / "catalog" / "cloud.yaml"


def shipped(kind: str) -> list[dict[str, Any]]:
    path = {"cards": CARDS, "servers": SERVERS, "colo_offers": COLO, "cloud_offers": CLOUD}[kind]
    items: list[dict[str, Any]] = yaml.safe_load(path.read_text(encoding="utf-8"))[kind]
    return items


def write_catalog(tmp: Path, name: str, **kinds: list[dict[str, Any]]) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump({"currency": "CNY", **kinds}, allow_unicode=True))
    return path


def write_reqs(tmp: Path, data: dict[str, Any], name: str = "reqs.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return path


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "examples" / name).read_text(encoding="utf-8"))
    return data


def owned_only(servers: Path = SERVERS) -> list[str]:
    """`--catalog` arguments for cards, the given servers and the colo offers: no cloud."""
    return [
        "--no-default-catalog",
        "--catalog",
        str(CARDS),
        "--catalog",
        str(servers),
        "--catalog",
        str(COLO),
    ]
