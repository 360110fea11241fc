"""Where the shipped data lives, and readers of it: the examples, the catalogue files and
the `--catalog` arguments of an owned-only run. Builders of new inputs are in
tests/factories/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
# Single plans; an example with `periods:` prints a purchase schedule instead (issue 38).
EXAMPLES = sorted(
    p for p in (ROOT / "examples").glob("*.yaml") if "\nperiods:" not in p.read_text()
)
CARDS = ROOT / "catalog" / "cards.yaml"
SERVERS = ROOT / "catalog" / "servers.yaml"
COLO = ROOT / "catalog" / "colo-jiangsu.yaml"
CLOUD = ROOT / "catalog" / "cloud.yaml"


def shipped(kind: str) -> list[dict[str, Any]]:
    """The entries of one kind (cards, servers, colo_offers, cloud_offers) as written."""
    path = {"cards": CARDS, "servers": SERVERS, "colo_offers": COLO, "cloud_offers": CLOUD}[kind]
    items: list[dict[str, Any]] = yaml.safe_load(path.read_text(encoding="utf-8"))[kind]
    return items


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
