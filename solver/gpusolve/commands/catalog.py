"""`gpusolve catalog`: validate, list and show catalogue items."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpusolve.commands.deliver import echo
from gpusolve.commands.options import CONFIGS, EXIT_CODES, catalog_option, format_option
from gpusolve.commands.settings import ENV, settings
from gpusolve.load import data_dir, load_catalog
from gpusolve.load.catalog import KINDS
from gpusolve.models.common import versioned

KIND_ALIASES = {
    "cards": "cards",
    "servers": "servers",
    "colo": "colo_offers",
    "cloud": "cloud_offers",
    "switches": "switches",
    "nics": "nics",
    "links": "links",
    "storage": "storage",
    "pdus": "pdus",
}


@click.group("catalog", epilog=EXIT_CODES)
def catalog() -> None:
    """Validate, list and show the priced catalogue (cards, servers, colo, cloud).

    \b
    Files you pass are read after the shipped catalogue: they add items, change fields
    of an existing item by id (`patch:`), or restate whole items (`replace: true` in the
    file). --no-default-catalog uses your files alone.
    Every figure carries its `source:`; prices marked illustrative are not quotes.
    """


@catalog.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--no-default-catalog",
    "alone",
    is_flag=True,
    help="Check the files alone, not on top of the shipped catalogue.",
)
def validate(paths: tuple[Path, ...], alone: bool) -> None:
    """Check catalogue files as a run reads them (after the shipped catalogue) and print
    counts; with no PATHS, the shipped catalogue."""
    if alone and not paths:
        raise click.UsageError("--no-default-catalog needs at least one PATH")
    from gpusolve.render.catalog import validate_text

    loaded = load_catalog(list(paths) if alone else [data_dir("catalog"), *paths])
    echo(validate_text(loaded), nl=False)


@catalog.command("list")
@click.option(
    "--kind",
    type=click.Choice(list(KIND_ALIASES)),
    default=None,
    help="Only this kind of item.",
)
@click.option(
    "--market",
    type=click.Choice(["cn", "global"]),
    default=lambda: settings().market,
    envvar=ENV["market"],
    show_envvar=True,
    help="Only what a buyer in this market can buy (cn: no server whose card is "
    "restricted for export to China); the servers left out are listed with the reason. "
    f"Default: the `market` key of {CONFIGS}, else every item.",
)
@catalog_option
@format_option("text", "json")
def list_items(
    kind: str | None, market: str | None, catalog_paths: tuple[Path, ...], fmt: str
) -> None:
    """List catalogue items with their key figures (json: every field)."""
    from gpusolve.render.catalog import list_text
    from gpusolve.runs.catalog import in_market, list_json

    loaded = load_catalog(list(catalog_paths) or None)
    kinds = [KIND_ALIASES[kind]] if kind else list(KINDS)
    if fmt == "json":
        payload = versioned("catalog-list", list_json(loaded, kinds, market=market))
        echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    shown, excluded = in_market(loaded.catalog, market)
    echo(list_text(shown, kinds, market, excluded), nl=False)


@catalog.command("show")
@click.argument("item_id")
@catalog_option
@format_option("text", "json")
def show(item_id: str, catalog_paths: tuple[Path, ...], fmt: str) -> None:
    """Show every field of one item, and the file and line it came from."""
    from gpusolve.render.catalog import item_text
    from gpusolve.runs.catalog import find_item

    loaded = load_catalog(list(catalog_paths) or None)
    try:
        kind, found = find_item(loaded, item_id)
    except LookupError as e:
        raise click.BadParameter(str(e), param_hint="ID") from None
    if fmt == "json":
        head = {"item_kind": kind, "defined_at": found["defined_at"]}
        head["patched_at"] = found["patched_at"]
        payload = versioned("catalog-item", {**head, **found["data"]})
        echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    echo(item_text(kind, item_id, found), nl=False)
