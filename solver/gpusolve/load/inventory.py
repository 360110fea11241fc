"""Cross-file checks of the requirements' `owned:` inventory against the catalogue: every
owned server and contracted rack names a catalogue item, and the site can host the server."""

from __future__ import annotations

import difflib

from gpusolve.errors import Problem
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Catalog
from gpusolve.models.inventory import Owned


def _hint(word: str, known: list[str], listing: str) -> str:
    close = difflib.get_close_matches(word, known, n=3)
    return f"did you mean {', '.join(close)}?" if close else f"see `{listing}`"


def inventory_problems(owned: Owned, doc: Document, catalog: Catalog) -> list[Problem]:
    """Located problems of the document's `owned:` (requirements or fleet): an unknown
    server or site, a site that cannot host the server."""
    problems: list[Problem] = []

    def problem(path: tuple[str | int, ...], what: str, hint: str) -> None:
        line, column = doc.locate(path) or (None, None)
        problems.append(Problem(doc.name, line, column, what, hint))

    sites = list(catalog.colo_offers)
    for i, held in enumerate(owned.servers):
        server = catalog.servers.get(held.server)
        if server is None:
            hint = _hint(held.server, list(catalog.servers), "gpusolve catalog list --kind servers")
            problem(("owned", "servers", i, "server"), f"unknown server {held.server!r}", hint)
        offer = catalog.colo_offers.get(held.site)
        if offer is None:
            hint = _hint(held.site, sites, "gpusolve catalog list --kind colo")
            problem(("owned", "servers", i, "site"), f"unknown colo site {held.site!r}", hint)
        if server is None or offer is None:
            continue
        if offer.cooling not in server.cooling or server.power_kw > offer.rack_kw:
            problem(
                ("owned", "servers", i, "site"),
                f"{held.site} ({offer.rack_kw:g} kW {offer.cooling} racks) cannot host "
                f"{held.server} ({server.power_kw:g} kW, {' or '.join(server.cooling)})",
                "give the colo offer where these servers are actually hosted",
            )
    problems += _site_capacity_problems(owned, doc, catalog)
    for i, racks in enumerate(owned.racks):
        if racks.site not in catalog.colo_offers:
            hint = _hint(racks.site, sites, "gpusolve catalog list --kind colo")
            problem(("owned", "racks", i, "site"), f"unknown colo site {racks.site!r}", hint)
    return problems


def _site_capacity_problems(owned: Owned, doc: Document, catalog: Catalog) -> list[Problem]:
    """Owned servers beyond what their site's racks can hold (the racks contracted there and
    the offer's racks for rent), counting as many per rack as its power and units allow
    (no load margin or reserved units: the most that could fit, so a real fleet is never
    refused)."""
    racks_held = {r.site: r.racks for r in owned.racks}
    used: dict[str, float] = {}
    first: dict[str, int] = {}
    for i, held in enumerate(owned.servers):
        server = catalog.servers.get(held.server)
        offer = catalog.colo_offers.get(held.site)
        if server is None or offer is None:
            continue
        per_rack = min(int(offer.rack_kw // server.power_kw), offer.rack_units // server.rack_units)
        if per_rack < 1:
            continue  # reported above: the site cannot host it at all
        used[held.site] = used.get(held.site, 0.0) + held.count / per_rack
        first.setdefault(held.site, i)
    problems = []
    for site, racks_needed in used.items():
        offer = catalog.colo_offers[site]
        racks = racks_held.get(site, 0) + offer.racks_available
        if racks_needed > racks:
            i = first[site]
            line, column = doc.locate(("owned", "servers", i, "count")) or (None, None)
            problems.append(
                Problem(
                    doc.name,
                    line,
                    column,
                    f"the servers owned at {site} fill {racks_needed:,.0f} racks, but the site "
                    f"has {racks:,} ({racks_held.get(site, 0):,} contracted + "
                    f"{offer.racks_available:,} for rent)",
                    "give the count actually owned there, or its contracted racks",
                )
            )
    return problems
