"""`--format html`: one self-contained page per command, and `frontier --plot`.

The plans of every example are solved once per module, in-process, and rendered both ways
(JSON as `plan --format json` prints it, HTML as `plan --format html` writes it), so the
page's figures can be checked against the JSON's. Every page is then opened in headless
Chromium over the DevTools pipe (one browser for all of them): no console message, no
exception, no request for anything but the page itself. That test skips only when no
Chromium binary is installed (`.ci/run` installs Debian's).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from tests.support import chromium
from tests.support.example_plans import solved
from tests.support.memo_layout import BLOCKS, MEASURE, SCREENS, WIDTHS, overlap
from tests.support.shipped import EXAMPLES, ROOT

from gpusolve.analyses import payback
from gpusolve.load.data import data_dir
from gpusolve.models.frontier import Frontier, FrontierPoint
from gpusolve.models.plan import Plan
from gpusolve.plan.inputs import prepare_run
from gpusolve.render import render_plan
from gpusolve.render.fmt import COST_LABELS
from gpusolve.render.frontier import chart
from gpusolve.report import charts, racks
from gpusolve.report.html import context_for, frontier_html, plan_html

FLEET = ROOT / "examples" / "fleets" / "h100-training-cluster.yaml"
EXAMPLES_BY_NAME = {path.stem: path for path in EXAMPLES}


# ---------------------------------------------------------------- reading a page back


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: str = ""

    def all_text(self) -> str:
        return self.text + "".join(c.all_text() for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, tag: str, **attrs: str) -> list[Node]:
        return [
            n
            for n in self.walk()
            if n.tag == tag and all(n.attrs.get(k) == v for k, v in attrs.items())
        ]

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


VOID = {"meta", "br", "link", "img", "input", "hr", "col", "source", "wbr"}


class Tree(HTMLParser):
    """A whole page as a tree (html.parser, standard library): enough to find tables,
    cells and SVG elements by tag and attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(Node("#text", {}, text=data))


def parse(html: str) -> Node:
    tree = Tree()
    tree.feed(html)
    tree.close()
    return tree.root


def number(cell: Node) -> float | None:
    """A cell's figure, without its marks (<sup>: illustrative, source note)."""
    text = "".join(c.text for c in cell.children if c.tag == "#text").strip()
    return None if text == "-" else float(text.replace(",", ""))


# ---------------------------------------------------------------- the examples, once


@dataclass
class Rendered:
    name: str
    plan: Plan
    json: dict[str, Any]
    html: str
    path: Path


# Examples whose plan raised (a bug elsewhere): test_every_example_has_a_plan names them;
# the other tests still check every example that planned.
FAILED_EXAMPLES: dict[str, str] = {}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[Rendered]:
    folder = tmp_path_factory.mktemp("reports")
    out = []
    catalog_paths = (data_dir("catalog"),)
    for example in EXAMPLES:
        try:
            made = solved(example)
            plan = payback.run(made)  # as `plan` runs it
        except RuntimeError as exc:  # the planner's own consistency check
            FAILED_EXAMPLES[example.stem] = str(exc)
            continue
        run = made.run
        ctx = context_for(run.catalog, list(catalog_paths), [example], run.reqs, plan)
        html = plan_html(plan, ctx)
        path = folder / f"{example.stem}.html"
        path.write_text(html, encoding="utf-8")
        out.append(Rendered(example.stem, plan, json.loads(render_plan(plan, "json")), html, path))
    return out


def test_every_example_has_a_plan(reports: list[Rendered]) -> None:
    assert FAILED_EXAMPLES == {}
    assert [r.name for r in reports] == [e.stem for e in EXAMPLES]
    assert all(r.json["status"] == "optimal" for r in reports)


def is_credit(item: dict[str, Any]) -> bool:
    return str(item["kind"]).startswith("residual")


def paid(cost: dict[str, Any]) -> float:
    """The JSON plan's TCO as paid: its lines other than credits (residual value)."""
    return sum(i["amount"] for i in cost["breakdown"]["items"] if not is_credit(i))


def test_every_number_in_the_cost_table_equals_the_json(reports: list[Rendered]) -> None:
    for r in reports:
        cost = r.json["cost"]
        table = parse(r.html).find("table", id="cost")
        assert len(table) == 1, r.name
        checked = 0
        lines = cost["breakdown"]["items"]
        spent = [i for kind in COST_LABELS for i in lines if i["kind"] == kind and not is_credit(i)]
        items = iter(spent + [i for i in lines if is_credit(i)])
        for row in table[0].find("tr"):
            cells = [c for c in row.find("td") if "num" in c.classes()]
            if "item" in row.classes():
                item = next(items)
                assert row.attrs["data-kind"] == item["kind"], r.name
                for cell in cells:
                    expected = item[cell.attrs["data-field"]]
                    if cell.attrs["data-field"] == "quantity" and expected is not None:
                        expected = round(expected, 2)  # a purchase order's two decimals
                    assert number(cell) == expected, (r.name, item)
                    checked += 1
                texts = [c.all_text() for c in row.find("td")]
                assert item["detail"] in texts and any(t.startswith(item["subject"]) for t in texts)
            elif "subtotal" in row.classes() and "credit" in row.classes():
                (cell,) = cells  # the TCO net of credits: the JSON's tco
                assert number(cell) == cost["tco"], r.name
                checked += 1
            elif "subtotal" in row.classes():
                (cell,) = cells
                assert number(cell) == cost["breakdown"][cell.attrs["data-field"]], r.name
                checked += 1
            elif "total" in row.classes():
                (cell,) = cells
                assert number(cell) == paid(cost), r.name
                checked += 1
            else:
                assert not cells, f"{r.name}: an unchecked figure in the cost table"
        assert next(items, None) is None, f"{r.name}: a cost line is missing from the table"
        kinds = {i["kind"] for i in spent}
        credits = any(is_credit(i) for i in lines)
        assert checked == 3 * len(lines) + len(kinds) + 1 + credits


def details_of(page: Node) -> list[Node]:
    """The page's sections after its "Details" heading: where each cost line stands once."""
    body = next(n for n in page.walk() if n.tag == "body")
    nodes = [n for n in body.children if n.tag != "#text"]
    at = next(i for i, n in enumerate(nodes) if n.tag == "h2" and n.all_text().strip() == "Details")
    return nodes[at + 1 :]


def test_no_cost_line_appears_twice_in_the_report(reports: list[Rendered]) -> None:
    """Issue 37: no cost line appears twice. The bill of materials is merged into the cost
    table: in every example's report each cost line (its label and its amount) is one row
    of the whole page, in the details, and no other row of the details repeats that label
    with that amount; its price source is a numbered note printed once."""
    for r in reports:
        page = parse(r.html)
        assert not page.find("table", id="bom"), r.name
        rows = page.find("tr")
        detail_rows = [row for node in details_of(page) for row in node.find("tr")]
        items = r.json["cost"]["breakdown"]["items"]
        assert items, r.name
        # One row per cost line, and no two rows alike.
        lines = [row.all_text() for row in detail_rows if "item" in row.classes()]
        assert len(lines) == len(set(lines)) == len(items), r.name
        for item in items:
            holding = [row for row in rows if item["detail"] in row.all_text()]
            assert len(holding) == 1, (r.name, item["detail"])
            amount = f"{item['amount']:,.0f}"
            label = COST_LABELS.get(item["kind"], item["kind"])
            same = [
                row
                for row in detail_rows
                if item["detail"] in row.all_text()
                and row.find("td")[0].all_text().strip() == label
                and any(
                    c.attrs.get("data-field") == "amount" and number(c) == item["amount"]
                    for c in row.find("td")
                )
            ]
            assert len(same) == 1, (r.name, label, amount, item["detail"])
        notes = [li.all_text() for li in page.find("ol", id="sources")[0].find("li")]
        assert len(notes) == len(set(notes)) >= 1, r.name
        for line in r.json["bom"]:  # the BOM's located sources are the notes
            if line["unit_price"] is not None and line["source"]:
                assert line["source"] in notes, (r.name, line["item"])


def memo_number(node: Node) -> float:
    """The first figure of a memo cell ('3,665,200 CNY', 'month 7')."""
    found = re.search(r"-?\d[\d,]*(\.\d+)?", node.all_text())
    assert found, node.all_text()
    return float(found.group().replace(",", ""))


def memo_figures(html: str) -> dict[str, list[float]]:
    """Every figure of the memo screen, by its data-memo name, in page order."""
    memo = parse(html).find("section", id="memo")[0]
    out: dict[str, list[float]] = {}
    for node in memo.walk():
        name = node.attrs.get("data-memo")
        if name and name != "payback":
            out.setdefault(name, []).append(memo_number(node))
    return out


def expected_memo(plan: dict[str, Any]) -> dict[str, list[float]]:
    """The same figures read from the JSON plan, by hand."""
    cost, pb = plan["cost"], plan["payback"]
    lines = cost["breakdown"]["items"]
    servers = [i for i in lines if i["kind"] == "servers_capex" and i["amount"]]
    out: dict[str, list[float]] = {
        "capex": [cost["capex"]],
        "opex": [paid(cost) - cost["capex"]],
        "tco": [paid(cost)],
    }
    amounts = [i["amount"] for i in servers]
    for kind in ("network", "storage"):
        if any(i["kind"] == kind and i["amount"] for i in lines):
            amounts.append(sum(i["amount"] for i in lines if i["kind"] == kind))
    if servers:
        out["count"] = [i["quantity"] for i in servers]
        out["unit_price"] = [i["unit_price"] for i in servers]
    if amounts:
        out["amount"] = amounts
    if plan["sites"]:
        out["racks"] = [s["racks"] for s in plan["sites"]]
        out["power_kw"] = [s["power_kw"] for s in plan["sites"]]
    rented = [d for d in plan["deployments"] if d["mode"] == "cloud"]
    if rented:
        rentals = [i for i in lines if i["kind"] == "cloud_rental"]
        out["rent"] = [
            sum(i["amount"] for i in rentals if i["detail"].startswith(f"{d['workload']}:"))
            for d in rented
        ]
    # Credits apart from the TCO: residual value lines, the servers bought sold at the
    # horizon, owned servers sold now.
    end = cost.get("horizon_resale") or {"amount": 0.0}
    credits = [
        sum(i["amount"] for i in lines if is_credit(i)),
        -end["amount"],
        -cost.get("resale", 0.0),
    ]
    if any(credits):
        out["credit"] = [c for c in credits if c]
    if pb["rental_tco"] is not None:
        out["rental_tco"] = [pb["rental_tco"]]
    return out


def test_every_figure_of_the_memo_equals_the_json(reports: list[Rendered]) -> None:
    for r in reports:
        assert memo_figures(r.html) == expected_memo(r.json), r.name
        payback_text = parse(r.html).find("dd", id="memo-payback")[0].all_text()
        month = r.json["payback"]["payback_month"]
        assert (f"month {month}" if month is not None else "n/a") in payback_text or (
            r.json["payback"]["rental_tco"] is not None and "none within" in payback_text
        ), r.name
        assert r.json["payback"]["summary"] in payback_text, r.name


def shipped_server_names() -> dict[str, str]:
    """Server id -> product name, read straight from the shipped catalogue's YAML."""
    import yaml

    data = yaml.safe_load((ROOT / "catalog" / "servers.yaml").read_text(encoding="utf-8"))
    return {s["id"]: s["name"] for s in data["servers"]}


def test_the_memo_marks_every_estimate_and_says_how_much_rests_on_them(
    reports: list[Rendered],
) -> None:
    for r in reports:
        memo = parse(r.html).find("section", id="memo")[0]
        lines = r.json["cost"]["breakdown"]["items"]
        servers = [i for i in lines if i["kind"] == "servers_capex" and i["amount"]]
        rows = [row for row in memo.find("tr") if "buy" in row.classes()]
        assert len(rows) == len(servers), r.name
        for item, row in zip(servers, rows, strict=True):
            price = next(c for c in row.find("td") if c.attrs.get("data-memo") == "unit_price")
            marked = any("est" in n.classes() for n in price.find("sup"))
            assert marked == item["illustrative"], (r.name, item["subject"])
        for row in memo.find("tr"):
            if "buy-group" in row.classes():  # network or storage, summed
                kind = row.find("td")[0].all_text().split(":")[0]
                estimated = any(i["illustrative"] for i in lines if i["kind"] == kind)
                assert bool(row.find("sup")) == estimated, (r.name, kind)
        # The headline: the share of the TCO paid on illustrative prices, by hand.
        on_estimates = sum(i["amount"] for i in lines if i["illustrative"] and not is_credit(i))
        headline = memo.find("p", id="memo-estimates")[0].all_text()
        if on_estimates:
            share = on_estimates / paid(r.json["cost"])
            assert headline.startswith(f"{share:.0%} of the TCO ({on_estimates:,.0f} "), r.name
            assert "--catalog" in headline, r.name
        else:
            assert "every one is a quote" in headline, r.name


def test_the_memo_names_products_dates_itself_and_names_no_machine_path(
    reports: list[Rendered],
) -> None:
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    names = shipped_server_names()
    machine = [str(ROOT), str(Path.home()), str(data_dir("catalog")), str(r_path_root())]
    for r in reports:
        page = parse(r.html)
        memo = page.find("section", id="memo")[0]
        bought = [
            i["subject"]
            for i in r.json["cost"]["breakdown"]["items"]
            if i["kind"] == "servers_capex" and i["amount"]
        ]
        cells = [row.find("td")[0].all_text() for row in memo.find("tr") if "buy" in row.classes()]
        assert cells == [names[s] for s in bought], r.name
        ids = page.find("table", id="product-ids")[0].all_text()
        assert all(s in ids for s in bought), r.name
        # What would change the decision names products too, no catalogue id.
        facts = memo.find("ol", id="memo-facts")[0].all_text()
        ids = [s.id for s in r.plan.sources]
        assert not [i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", facts)]
        made = page.find("p", id="made")[0].all_text()
        assert re.search(r"Made on \d{4}-\d{2}-\d{2} by gpusolve ", made), r.name
        assert f"gpusolve {version} from {r.name}.yaml" in made, r.name
        for folder in machine:
            assert folder not in r.html, (r.name, folder)


def test_the_markdown_memo_names_products_and_keeps_the_ids_for_its_appendix(
    reports: list[Rendered],
) -> None:
    """The Markdown memo of every example: dated, signed with the version and the input's
    name, servers by product name, no catalogue id before the appendix (what would change
    the decision included), every id in the appendix."""
    from gpusolve.render.about import about
    from gpusolve.render.markdown import plan_markdown

    names = shipped_server_names()
    catalog = prepare_run(EXAMPLES[0], (data_dir("catalog"),), ()).catalog
    for r in reports:
        example = next(e for e in EXAMPLES if e.stem == r.name)
        text = plan_markdown(r.plan, about(catalog, [example]))
        assert re.search(
            rf"_Made on \d{{4}}-\d{{2}}-\d{{2}} by gpusolve \S+ from {r.name}\.yaml\._", text
        )
        decision = text[text.index("## The decision") : text.index("## Details")]
        ids = [s.id for s in r.plan.sources]
        whole = [i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", decision)]
        assert whole == [], (r.name, whole)
        bought = [
            i["subject"]
            for i in r.json["cost"]["breakdown"]["items"]
            if i["kind"] == "servers_capex" and i["amount"]
        ]
        assert all(f"| {names[s]} |" in decision for s in bought), r.name
        appendix = text[text.index("## Sources") :]
        assert all(f"`{i}`" in appendix for i in ids), r.name
        assert str(ROOT) not in text and str(Path.home()) not in text, r.name


def test_the_memo_and_the_cash_table_show_the_present_value_of_the_json(
    reports: list[Rendered],
) -> None:
    for r in reports:
        cash = r.json["cash"]
        page = parse(r.html)
        shown = page.find("dd", id="memo-npv")[0].all_text()
        assert shown.startswith(f"{cash['npv']:,.0f} "), r.name
        assert f"{cash['nominal']:,.0f}" in shown, r.name
        rows = page.find("table", id="cash")[0].find("tr")[1:]
        totals = [number(row.find("td")[5]) for row in rows]
        assert sum(totals) == sum(m["total"] for m in cash["months"]) == cash["nominal"], r.name
        # Cash paid is the TCO plus interest and upkeep, nothing else.
        assert cash["nominal"] == cash["tco"] + cash["interest"] + cash["upkeep"], r.name
        assert cash["tco"] == paid(r.json["cost"]), r.name


def r_path_root() -> Path:
    """The folder the examples' reports are written to (a temporary one)."""
    return Path(os.environ.get("TMPDIR", "/tmp")).resolve()


def test_penalties_in_the_report_equal_the_json(reports: list[Rendered]) -> None:
    for r in reports:
        cost = r.json["cost"]
        tables = parse(r.html).find("table", id="penalties")
        if not cost["breakdown"]["penalty_items"]:
            assert not tables
            continue
        cells = [c for c in tables[0].find("td") if "num" in c.classes()]
        amounts = [p["amount"] for p in cost["breakdown"]["penalty_items"]]
        assert [number(c) for c in cells] == [*amounts, cost["penalties"], cost["objective_value"]]


def test_every_report_has_its_sections_charts_and_pictures(reports: list[Rendered]) -> None:
    assert charts.available(), "matplotlib is a dependency of gpusolve"
    for r in reports:
        page = parse(r.html)
        ids = {n.attrs.get("id") for n in page.walk()}
        assert {"memo", "payments", "claim", "cost", "deployments", "assumptions"} <= ids
        svg_ids = [n.attrs.get("id", "") for n in page.find("svg")]
        assert {"cost-chart", "payments-chart", "capacity-chart"} <= set(svg_ids), r.name
        # Each chart has its text equivalent: a table with the same figures.
        assert {"cost", "payments", "capacity"} <= ids, r.name
        bars = [n for n in page.find("svg") if "bar" in n.classes()]
        assert len(bars) == len(r.plan.deployments), r.name
        for d, bar in zip(r.plan.deployments, bars, strict=True):
            # The memory per GPU by part: the parts add up to the deployment's figure.
            assert abs(sum(d.memory_parts_gb.values()) - d.memory_per_gpu_gb) < 0.05, r.name
            titles = [t.all_text() for t in bar.find("title")]
            assert any(t.startswith("weights: ") for t in titles), r.name
        pictures = page.find("div", **{"class": "rack"})
        assert len(pictures) == sum(site.racks for site in r.plan.sites), r.name
        if r.plan.rules_fired:
            assert "rules" in ids
            # The heuristic's own words stand beside the rule that cites it.
            assert "Start by classifying" in r.html or r.plan.rules_fired[0].source in r.html
        claim = page.find("section", id="claim")[0].all_text()
        assert "Proven optimal" in claim and " layout" in claim, r.name  # "1 layout", "2 layouts"
        assumptions = page.find("section", id="assumptions")[0].all_text()
        assert f"Horizon {r.plan.cost.horizon_months} months" in assumptions  # type: ignore[union-attr]
        assert "Illustrative prices" in assumptions


def test_every_report_is_self_contained(reports: list[Rendered]) -> None:
    for r in reports:
        page = parse(r.html)
        csp = [
            m for m in page.find("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"
        ]
        assert csp and "default-src 'none'" in csp[0].attrs["content"], r.name
        assert not page.find("script"), r.name
        for node in page.walk():
            for name in ("src", "href", "xlink:href", "action", "data"):
                value = node.attrs.get(name)
                if value is not None:
                    assert value.startswith(("#", "data:")), (r.name, node.tag, value)
        assert "url(http" not in r.html and "@import" not in r.html, r.name
        assert "@media print" in r.html, r.name


def test_rack_pictures_stack_the_plan_fill_from_the_bottom(reports: list[Rendered]) -> None:
    sited = [r for r in reports if r.plan.sites]
    assert sited, "an example colocates servers"
    site = sited[0].plan.sites[0]
    units = {s: 4 for s in site.servers}
    pictures = racks.site_racks(site, units, {s: 5.5 for s in site.servers}, 42)
    assert len(pictures) == site.racks
    for picture, fill, kw in zip(pictures, site.fill, site.fill_kw, strict=True):
        assert picture.used_units == 4 * sum(fill.values())
        assert [b.bottom_u for b in picture.boxes] == list(range(0, picture.used_units, 4))
        assert picture.used_kw == kw and picture.rack_units == 42
        assert picture.reserved_units == site.reserved_units
        assert picture.usable_kw == site.rack_kw - site.reserved_kw


def test_names_are_escaped(reports: list[Rendered]) -> None:
    plan = reports[0].plan
    hostile = plan.deployments[0].model_copy(update={"workload": "<script>alert(1)</script>"})
    page = plan_html(plan.model_copy(update={"deployments": [hostile]}))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_without_the_charting_extra_the_report_keeps_its_tables(
    reports: list[Rendered], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(charts, "available", lambda: False)
    r = next(r for r in reports if r.plan.sites)
    page = parse(plan_html(r.plan))
    assert page.find("table", id="cost")
    assert not [n for n in page.find("svg") if n.attrs.get("id", "").startswith("cost-")]
    assert "pip install 'matplotlib" in page.all_text()
    assert page.find("div", **{"class": "rack"}), "rack pictures are drawn without matplotlib"


def test_sensitivity_and_scenarios_render_when_present(reports: list[Rendered]) -> None:
    from gpusolve.models.plan import ScenarioOutcome, Scenarios, Sensitivity, SensitivityRange

    plan = reports[0].plan
    sens = Sensitivity(
        ranges=[
            SensitivityRange(
                kind="cloud_price",
                subject="cloud-a",
                parameter="price of cloud-a",
                unit="CNY/h",
                current=100,
                low=None,
                high=180,
                searched_low=10,
                searched_high=1000,
                above="buy 1 x hgx",
                above_tco=12345,
            ),
            SensitivityRange(
                kind="efficiency",
                subject="h800-sxm",
                parameter="MFU of h800-sxm",
                unit="MFU",
                current=0.5,
                low=0.45,
                high=0.52,
                searched_low=0.2,
                searched_high=0.8,
            ),
        ],
        solves=14,
    )
    scen = Scenarios(
        robust="expected",
        tco=1000,
        nominal_tco=1200,
        hedge_cost=50,
        outcomes=[ScenarioOutcome(name="slow", probability=0.25, tco=1500, nominal_tco=2100)],
    )
    page = parse(plan_html(plan.model_copy(update={"sensitivity": sens, "scenarios": scen})))
    rows = page.find("table", id="sensitivity")[0].find("tr")[1:]
    assert [r.find("td")[0].all_text() for r in rows] == ["price of cloud-a", "MFU of h800-sxm"]
    assert "≤ 10" in rows[0].all_text() and "buy 1 x hgx" in rows[0].all_text()
    assert [n.attrs["id"] for n in page.find("svg") if n.attrs.get("id", "").startswith("tor")]
    # The narrowest range (the MFU's, -10%..+4%) is the top bar of the tornado.
    ordered = charts.tornado_rows(sens)
    assert [r.parameter for r, *_ in ordered] == ["MFU of h800-sxm", "price of cloud-a"]
    assert "slow" in page.find("table", id="scenarios")[0].all_text()


# ---------------------------------------------------------------- the commands


def test_plan_html_needs_an_output_file(gpusolve) -> None:
    result = gpusolve("plan", "-q", str(EXAMPLES[0]), "--format", "html")
    assert result.code == 2 and "-o" in result.err


def test_plan_writes_the_html_report(gpusolve, reports: list[Rendered], tmp_path: Path) -> None:
    # The same example, solved the same way, as the module's JSON plan (deterministic).
    example = next(r for r in reports if r.name == "finetune-7b-deadline")
    out = tmp_path / "report.html"
    result = gpusolve(
        "plan", "-q", str(EXAMPLES_BY_NAME[example.name]), "--format", "html", "-o", str(out)
    )
    assert result.code == 0, result.err
    assert result.out == ""  # the page goes to the file, never to the terminal
    page = out.read_text(encoding="utf-8")
    assert memo_figures(page) == expected_memo(example.json)
    assert "capacity-chart" in page  # the command passes the requirements' demand


def test_the_appendix_holds_the_launch_files_plan_launch_writes(gpusolve, tmp_path: Path) -> None:
    """Issue 37 item 4: the report's appendix holds each deployment's launch files, the
    same text `plan --launch DIR` writes, one <pre> per file, after the details. One run of
    the command writes both, for a training example (Megatron-LM) and a disaggregated
    serving one (vLLM/SGLang pools)."""
    for name in ("pretrain-70b-infiniband", "chat-70b-disaggregated"):
        out, folder = tmp_path / f"{name}.html", tmp_path / name
        args = ["plan", "-q", str(EXAMPLES_BY_NAME[name]), "--format", "html", "-o", str(out)]
        # The memo's default sensitivity ranges are no part of the appendix: not run here.
        result = gpusolve(*args, "--no-sensitivity", "--launch", str(folder))
        assert result.code == 0, result.err
        written = {
            str(p.relative_to(folder)): p.read_text(encoding="utf-8")
            for p in folder.rglob("*")
            if p.is_file()
        }
        assert len(written) > 1, name  # the README and at least one deployment's file
        page = parse(out.read_text(encoding="utf-8"))
        section = page.find("section", id="launch-appendix")
        assert len(section) == 1, name
        shown = {pre.attrs["data-path"]: pre.all_text() for pre in section[0].find("pre")}
        assert shown == written, name
        # After the details: the last section of the page.
        assert [n for n in details_of(page) if n.tag == "section"][-1] is section[0], name


def test_every_report_has_the_launch_appendix(reports: list[Rendered]) -> None:
    for r in reports:
        section = parse(r.html).find("section", id="launch-appendix")
        assert len(section) == 1, r.name
        paths = [pre.attrs["data-path"] for pre in section[0].find("pre")]
        assert "README.md" in paths, r.name
        for d in r.plan.deployments:
            assert any(p.startswith(f"{d.workload}/") for p in paths), (r.name, d.workload)


def test_every_training_run_shows_goodputs_parts_adding_up(reports: list[Rendered]) -> None:
    """Issue 36: each training deployment's run, steady state then each part goodput adds,
    in hours and money, the parts adding up to the total, which is the JSON's."""
    trained = 0
    for r in reports:
        page = parse(r.html)
        for d in r.plan.deployments:
            if d.goodput is None:
                continue
            trained += 1
            table = page.find("table", **{"class": "goodput", "data-workload": d.workload})
            assert len(table) == 1, (r.name, d.workload)
            rows = [row for row in table[0].find("tr") if row.find("td")]
            labels = [row.find("td")[0].all_text() for row in rows]
            assert labels[0].startswith("steady state") and labels[-1] == "total per run"
            hours = [number(row.find("td", **{"data-field": "hours"})[0]) for row in rows]
            money = [number(row.find("td", **{"data-field": "cost"})[0]) for row in rows]
            assert None not in hours and None not in money, (r.name, d.workload)
            *part_h, total_h = hours
            *part_money, total_money = money
            assert round(sum(part_h), 2) == total_h  # type: ignore[arg-type]
            assert sum(part_money) == total_money  # type: ignore[arg-type]
            assert total_h == pytest.approx(d.goodput.total_h, abs=0.006), r.name
            assert d.run_cost is not None
            assert total_money == pytest.approx(d.run_cost, abs=0.5 + 1e-6), r.name
    assert trained >= 5


@dataclass
class Page:
    html: Path
    json: dict[str, Any]


def run_cli(*args: str) -> None:
    """The console entry point in-process, for a module fixture (its output goes to -o)."""
    from gpusolve.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        assert exc.code in (0, None), args


@pytest.fixture(scope="module")
def command_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Page]:
    """`colo` and `estimate` pages written by the commands, with the JSON of the same run."""
    folder = tmp_path_factory.mktemp("pages")
    runs = {
        "colo": ("colo", str(FLEET), "--top", "3"),
        "estimate": (
            "estimate",
            str(EXAMPLES_BY_NAME["finetune-7b-deadline"]),
            "--card",
            "h800-sxm",
        ),
    }
    pages = {}
    for name, args in runs.items():
        html, as_json = folder / f"{name}.html", folder / f"{name}.json"
        run_cli(*args, "--format", "html", "-o", str(html))
        run_cli(*args, "--format", "json", "-o", str(as_json))
        pages[name] = Page(html, json.loads(as_json.read_text(encoding="utf-8")))
    return pages


def test_colo_html_ranks_the_offers_as_the_json_does(command_pages: dict[str, Page]) -> None:
    page = command_pages["colo"]
    best = [row for row in page.json["offers"] if row["feasible"]][:3]
    tree = parse(page.html.read_text(encoding="utf-8"))
    rows = tree.find("table", id="ranking")[0].find("tr")[1:]
    assert [r.find("td")[1].children[0].text for r in rows] == [b["offer"] for b in best]
    assert [number(r.find("td")[-2]) for r in rows] == [b["tco"] for b in best]
    # The best offer's racks, each drawn.
    assert len(tree.find("div", **{"class": "rack"})) == len(best[0]["fill"])
    # The monthly bills on one scale: the dearest offer's bar is full, each split into rent,
    # energy and bandwidth that add up to its monthly bill.
    from gpusolve.models.colo import ColoRow
    from gpusolve.report.html import monthly_bills

    bills = monthly_bills([ColoRow.model_validate(b) for b in best])
    widths = [sum(part.width for part in bill) for bill in bills]
    assert max(widths) == pytest.approx(1.0)
    for bill, row in zip(bills, best, strict=True):
        assert sum(part.value for part in bill) == pytest.approx(row["monthly"], abs=1)


def test_estimate_html_shows_memory_and_step_parts(command_pages: dict[str, Page]) -> None:
    page = command_pages["estimate"]
    config = page.json["workloads"][0]["configs"][0]
    tree = parse(page.html.read_text(encoding="utf-8"))
    memory = tree.find("table", **{"class": "memory"})[0].find("td")
    assert number(memory[-1]) == round(config["memory_per_gpu_gb"]["total"], 2)
    step = tree.find("table", **{"class": "step"})[0].find("td")
    assert number(step[-1]) == round(config["step"]["step_s"], 4)


def test_html_needs_an_output_file_in_every_command(gpusolve) -> None:
    example = str(EXAMPLES_BY_NAME["finetune-7b-deadline"])
    for args in (("colo", str(FLEET)), ("estimate", example), ("frontier", example)):
        result = gpusolve(*args, "--format", "html")
        assert result.code == 2 and "-o" in result.err, args


def frontier_of(costs_hours: list[tuple[float, float]]) -> Frontier:
    return Frontier(
        currency="CNY",
        horizon_months=12,
        points=[
            FrontierPoint(
                deadline_factor=0.5 * (i + 1),
                tco=c,
                capex=0,
                makespan_h=h,
                hardware=[f"w: rent {i + 1} x cloud-8x-h800"],
            )
            for i, (c, h) in enumerate(costs_hours)
        ],
    )


def test_ascii_frontier_chart_starts_at_zero() -> None:
    # Two plans 2% apart in cost: from zero they sit on the same row or the next one; zoomed
    # to the data, the chart draws them a whole height apart (what the issue complained of).
    f = frontier_of([(102_000, 10), (100_000, 20)])
    rows = [line for line in chart(f) if line.startswith("  |")]
    marked = [i for i, row in enumerate(rows) if "*" in row]
    assert max(marked) - min(marked) <= 1
    assert "bottom row: TCO 0" in chart(f)[-1]
    zoomed = [line for line in chart(f, from_zero=False) if line.startswith("  |")]
    zoomed_marked = [i for i, row in enumerate(zoomed) if "*" in row]
    assert max(zoomed_marked) - min(zoomed_marked) == len(zoomed) - 1


def test_frontier_plot_axes_start_at_zero_and_number_each_point() -> None:
    f = frontier_of([(102_000, 10), (100_000, 20)])
    ax = charts.frontier_figure(f).axes[0]
    assert ax.get_xlim()[0] == 0 and ax.get_ylim()[0] == 0
    assert [t.get_text() for t in ax.texts] == ["1", "2"]  # the table's rows
    zoomed = charts.frontier_figure(f, from_zero=False).axes[0]
    assert zoomed.get_ylim()[0] > 90_000


def test_frontier_axes_go_logarithmic_where_cheap_points_would_sit_on_them() -> None:
    # A 20,000 rental beside a 2,000,000 purchase: from zero the rental would sit at 1% of
    # the cost axis; 100 times apart, the cost axis is logarithmic and shows both.
    f = frontier_of([(2_000_000, 10), (20_000, 40)])
    ax = charts.frontier_figure(f).axes[0]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "linear"
    assert ax.get_ylim()[0] < 20_000 < 2_000_000 < ax.get_ylim()[1]
    assert "log" in ax.get_ylabel()


def test_frontier_labels_do_not_overlap_each_other_or_the_markers() -> None:
    # Twelve points crowded along a line: the first place beside each would collide.
    f = frontier_of([(100_000 + 3_000 * i, 50 - 0.4 * i) for i in range(12)])
    fig = charts.frontier_figure(f)
    boxes = charts.label_boxes(fig)
    assert [text for text, _ in boxes] == [str(i) for i in range(1, 13)]
    ax = fig.axes[0]
    markers = [ax.transData.transform((p.makespan_h, p.tco)) for p in f.points]
    for i, (text, a) in enumerate(boxes):
        for other, b in boxes[i + 1 :]:
            assert not a.overlaps(b), (text, other)
        for x, y in markers:  # no label covers a marker's centre
            assert not (a.x0 < x < a.x1 and a.y0 < y < a.y1), (text, x, y)


def test_the_cost_per_hour_saved_is_the_step_to_the_next_slower_plan() -> None:
    from gpusolve.render.frontier import cost_per_hour_saved

    # Fastest first: 150,000 at 5 h, 100,000 at 20 h, 90,000 at 40 h. From 20 h to 5 h
    # costs 50,000 for 15 h = 3,333.33 an hour; from 40 h to 20 h 10,000 for 20 h = 500.
    f = frontier_of([(150_000, 5), (100_000, 20), (90_000, 40)])
    saved = cost_per_hour_saved(f)
    assert saved[0] == pytest.approx(50_000 / 15) and saved[1] == 500 and saved[2] is None
    page = parse(frontier_html(f))
    cells = [c for c in page.walk() if c.attrs.get("data-field") == "per_hour_saved"]
    assert [c.all_text() for c in cells] == ["3,333", "500", "-"]


def test_frontier_html_and_plot_from_the_command(gpusolve, tmp_path: Path) -> None:
    example = ROOT / "examples" / "startup-tight-capex.yaml"
    page, svg = tmp_path / "f.html", tmp_path / "f.svg"
    args = ("frontier", "-q", str(example), "--points", "2", "--time-limit", "10")
    result = gpusolve(*args, "--format", "html", "-o", str(page), "--plot", str(svg))
    assert result.code == 0, result.err
    text = page.read_text(encoding="utf-8")
    assert parse(text).find("table", id="frontier") and 'id="frontier-chart"' in text
    assert svg.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg"))
    bad = gpusolve(*args, "--plot", str(tmp_path / "f.pdf"))
    assert bad.code == 2 and ".svg or .png" in bad.err


def test_frontier_plot_as_png() -> None:
    f = frontier_of([(150_000, 5), (100_000, 20)])
    assert charts.write_frontier_plot(f, Path("f.png")).startswith(b"\x89PNG")


def test_frontier_html_renders_a_hand_made_frontier() -> None:
    page = parse(frontier_html(frontier_of([(150_000, 5), (100_000, 20)])))
    rows = page.find("table", id="frontier")[0].find("tr")[1:]
    assert [number(r.find("td")[2]) for r in rows] == [150_000, 100_000]


# ---------------------------------------------------------------- in a real browser


@pytest.fixture(scope="module")
def browser() -> Iterator[chromium.Browser]:
    """One headless Chromium for the module's browser tests; they skip without one."""
    binary = chromium.binary()
    if binary is None:
        pytest.skip("no Chromium binary (.ci/run installs one)")
    with chromium.Browser(binary) as b:
        yield b


def test_every_report_opens_in_chromium_without_errors_or_requests(
    reports: list[Rendered],
    command_pages: dict[str, Page],
    tmp_path: Path,
    browser: chromium.Browser,
) -> None:
    frontier = tmp_path / "frontier.html"
    frontier.write_text(frontier_html(frontier_of([(150_000, 5), (100_000, 20)])), "utf-8")
    # A page that breaks both rules, so the check is seen to fail when it should.
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><img src="http://example.invalid/x.png">'
        '<script>console.error("boom")</script></body></html>',
        "utf-8",
    )
    pages = [r.path for r in reports] + [p.html for p in command_pages.values()] + [frontier, bad]
    browser.viewport(1280, 900)
    seen = {page.name: browser.load(page) for page in pages}
    for page in pages[:-1]:
        assert seen[page.name].problems == [], page.name
        assert seen[page.name].urls == [page.resolve().as_uri()], page.name
    assert any("boom" in p for p in seen[bad.name].problems)
    assert "http://example.invalid/x.png" in seen[bad.name].urls


def test_help_imports_neither_the_templates_nor_the_charts() -> None:
    # The report's libraries load only when a report or a plot is asked for.
    probe = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpusolve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "matplotlib" not in probe.stderr and "jinja2" not in probe.stderr


def test_searched_figures_print_to_the_search_precision() -> None:
    from gpusolve.report.html import sig

    assert [sig(9.600000000000001), sig(111.71758644264744), sig(0.8546688815502315)] == [
        "9.6",
        "111.7",
        "0.8547",
    ]
    assert sig(1_500_000.4) == "1,500,000" and sig(None) == "-"


def test_the_scenarios_example_reports_each_scenario_as_the_json(
    reports: list[Rendered],
) -> None:
    with_scenarios = [r for r in reports if r.json.get("scenarios")]
    assert with_scenarios, "an example has a scenarios: block"
    for r in with_scenarios:
        outcomes = r.json["scenarios"]["outcomes"]
        rows = parse(r.html).find("table", id="scenarios")[0].find("tr")[1:]
        assert [row.find("td")[0].all_text() for row in rows] == [o["name"] for o in outcomes]
        assert [number(row.find("td")[2]) for row in rows] == [o["tco"] for o in outcomes]


def test_plot_without_the_charting_extra_says_what_to_install(
    gpusolve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(charts, "available", lambda: False)
    example = str(EXAMPLES_BY_NAME["startup-tight-capex"])
    result = gpusolve("frontier", "-q", example, "--plot", str(tmp_path / "f.svg"))
    assert result.code == 2 and "matplotlib" in result.err
    assert not (tmp_path / "f.svg").exists()


def test_the_memo_screen_shows_the_decision_without_scrolling(
    reports: list[Rendered], browser: chromium.Browser, tmp_path: Path
) -> None:
    """At desktop and print width, the memo (what to buy, where, what to rent, capex,
    opex over the horizon, TCO, payback, what would change it) ends within the first screen or
    page, nothing overflows sideways, and each figure drawn equals the JSON plan's.
    Screenshots go to $GPUSOLVE_SCREENSHOTS when set (to look at), else tmp_path."""
    folder = Path(os.environ.get("GPUSOLVE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    for screen, (width, height, media) in SCREENS.items():
        browser.viewport(width, height, media)
        for r in reports:
            where = f"{r.name} ({screen} {width}x{height})"
            assert browser.load(r.path).problems == [], where
            seen = browser.evaluate(MEASURE)
            browser.screenshot(folder / f"{r.name}-{screen}.png")
            assert seen["page_width"] <= width, f"{where}: the page scrolls sideways"
            assert seen["memo"]["bottom"] <= height, f"{where}: memo ends at {seen['memo']}"
            parts = ["buy", "payback", "facts"] + ["where"] * bool(r.plan.sites)
            parts += ["rent"] * any(d.mode == "cloud" for d in r.plan.deployments)
            for part in parts:
                box = seen[part]
                assert box is not None and box["height"] > 0, f"{where}: no {part}"
                assert box["bottom"] <= height and box["right"] <= width, (where, part, box)
            drawn: dict[str, list[float]] = {}
            for f in seen["figures"]:
                assert f["width"] > 0 and f["bottom"] <= height, (where, f)
                if f["name"] != "payback":
                    found = re.search(r"-?\d[\d,]*(\.\d+)?", f["text"])
                    assert found, (where, f)
                    drawn.setdefault(f["name"], []).append(float(found.group().replace(",", "")))
            assert drawn == expected_memo(r.json), where
            assert {"capex", "opex", "tco"} <= set(drawn), where
            assert drawn["capex"][0] + drawn["opex"][0] == drawn["tco"][0], where


def test_overlap_counts_only_shared_area() -> None:
    box = {"left": 0, "top": 0, "right": 10, "bottom": 10}
    assert overlap(box, {"left": 5, "top": 5, "right": 20, "bottom": 20}) == 25
    assert overlap(box, {"left": 10, "top": 0, "right": 20, "bottom": 10}) == 0  # touching


def test_the_memo_has_no_overlapping_blocks_at_any_width(
    reports: list[Rendered], browser: chromium.Browser
) -> None:
    """At 390 (a phone), 800 and 1280 px and in print, no two blocks of the memo overlap
    and no block (nor the page) is wider than the window: a wide table scrolls in its box."""
    for screen, (width, height, media) in WIDTHS.items():
        browser.viewport(width, height, media)
        for r in reports:
            where = f"{r.name} ({screen} {width}px)"
            assert browser.load(r.path).problems == [], where
            seen = browser.evaluate(BLOCKS)
            boxes = seen["boxes"]
            assert len(boxes) >= 5, where
            for i, a in enumerate(boxes):
                assert a["right"] <= width + 0.5 and a["left"] >= -0.5, (where, a)
                for b in boxes[i + 1 :]:
                    assert overlap(a, b) < 1, (where, a, b)
            assert seen["page_width"] <= width, f"{where}: the page scrolls sideways"


def test_a_plan_report_draws_the_frontier_when_given_one(reports: list[Rendered]) -> None:
    f = frontier_of([(150_000, 5), (100_000, 20), (90_000, 40)])
    page = parse(plan_html(reports[0].plan, frontier=f))
    assert [n for n in page.find("svg") if n.attrs.get("id") == "frontier-chart"]
    rows = page.find("table", id="frontier")[0].find("tr")[1:]
    assert [number(r.find("td")[2]) for r in rows] == [150_000, 100_000, 90_000]
    assert not parse(plan_html(reports[0].plan)).find("section", id="frontier-section")
