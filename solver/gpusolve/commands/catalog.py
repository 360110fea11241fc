"""`gpusolve catalog`: validate, list and show catalogue items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gpusolve.commands.options import catalog_option, format_option
from gpusolve.load import data_dir, load_catalog
from gpusolve.load.catalog import KINDS

KIND_ALIASES = {
    "cards": "cards",
    "servers": "servers",
    "colo": "colo_offers",
    "cloud": "cloud_offers",
    "switches": "switches",
    "nics": "nics",
    "links": "links",
    "storage": "storage",
}


@click.group("catalog")
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
    loaded = load_catalog(list(paths) if alone else [data_dir("catalog"), *paths])
    counts = loaded.counts()
    click.echo(f"ok: {len(loaded.files)} file(s), currency {loaded.catalog.currency}")
    for kind in KINDS:
        click.echo(f"  {kind:<13} {counts[kind]:>4}")


@catalog.command("list")
@click.option(
    "--kind",
    type=click.Choice(list(KIND_ALIASES)),
    default=None,
    help="Only this kind of item.",
)
@catalog_option
@format_option("text", "json")
def list_items(kind: str | None, catalog_paths: tuple[Path, ...], fmt: str) -> None:
    """List catalogue items with their key figures (json: every field)."""
    cat = load_catalog(list(catalog_paths) or None).catalog
    kinds = [KIND_ALIASES[kind]] if kind else list(KINDS)
    if fmt == "json":
        out = {k: [v.model_dump(mode="json") for v in getattr(cat, k).values()] for k in kinds}
        payload: Any = out[kinds[0]] if kind else {"currency": cat.currency, **out}
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    for k in kinds:
        items = list(getattr(cat, k).values())
        click.echo(f"{k} ({len(items)})")
        for item in items:
            click.echo("  " + _summary(k, item, cat.currency))


def _summary(kind: str, item: Any, currency: str) -> str:
    if kind == "cards":
        bf16 = item.tflops.bf16 or item.tflops.fp16 or item.tflops.fp32
        export = item.export_cn.status if item.export_cn else "unknown"
        return (
            f"{item.id:<22} {item.memory_gb:>5.0f} GB {item.memory_bandwidth_gbs:>6.0f} GB/s "
            f"{bf16:>7.1f} TFLOPS(bf16) {item.tdp_w:>5.0f} W  {item.peer_link:<15} "
            f"China: {export}"
        )
    if kind == "servers":
        return (
            f"{item.id:<26} {item.gpus}x {item.card:<18} {item.power_kw:>5.1f} kW "
            f"{item.rack_units:>2}U {'/'.join(item.cooling):<24} {item.price:>12,.0f} {currency}"
        )
    if kind == "colo_offers":
        return (
            f"{item.id:<28} {item.region:<14} {item.city:<12} {item.cooling:<12} "
            f"{item.rack_kw:>5.1f} kW x{item.racks_available:<3} "
            f"{item.rack_price_per_month:>8,.0f} {currency}/rack/mo PUE {item.pue}"
        )
    if kind in ("switches", "nics", "links", "storage"):
        return f"{item.id:<26} {item.name:<60} {item.price:>12,.0f} {currency}"
    return (
        f"{item.id:<26} {item.gpus_per_instance}x {item.card:<18} "
        f"{item.price_per_hour:>8,.2f} {currency}/h  {item.region}"
    )


@catalog.command("show")
@click.argument("item_id")
@catalog_option
@format_option("text", "json")
def show(item_id: str, catalog_paths: tuple[Path, ...], fmt: str) -> None:
    """Show every field of one item, and the file and line it came from."""
    loaded = load_catalog(list(catalog_paths) or None)
    for kind in KINDS:
        item = getattr(loaded.catalog, kind).get(item_id)
        if item is None:
            continue
        data = item.model_dump(mode="json")
        file, line = loaded.origins.get(item_id, ("?", None))
        patched = [{"at": r.at, "fields": list(r.fields)} for r in loaded.patches.get(item_id, [])]
        if fmt == "json":
            head = {"kind": kind, "defined_at": f"{file}:{line}", "patched_at": patched}
            click.echo(json.dumps({**head, **data}, indent=2))
            return
        click.echo(f"{kind[:-1]} {item_id}  (defined at {file}:{line})")
        for record in patched:
            click.echo(f"  patched at {record['at']}: {', '.join(record['fields'])}")
        _print_tree(data, indent=2)
        return
    known = [i for k in KINDS for i in getattr(loaded.catalog, k)]
    import difflib

    close = difflib.get_close_matches(item_id, known, n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise click.BadParameter(f"no catalogue item with id {item_id!r}.{hint}", param_hint="ID")


def _print_tree(data: Any, indent: int) -> None:
    pad = " " * indent
    for key, value in data.items():
        if isinstance(value, dict):
            click.echo(f"{pad}{key}:")
            _print_tree(value, indent + 2)
        elif isinstance(value, list):
            click.echo(f"{pad}{key}: {', '.join(str(v) for v in value) or '-'}")
        else:
            click.echo(f"{pad}{key}: {value}")
