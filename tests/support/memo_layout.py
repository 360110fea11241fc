"""The memo page measured in a browser (the DevTools protocol's Runtime.evaluate): the
scripts that read its figures and blocks back, the windows it is read at, and the area two
boxes share. Shared by the report's browser tests."""

from __future__ import annotations

from typing import Any

# The memo screen, measured in the browser: where each figure is drawn (CSS pixels from the
# page's top left) and the text it shows.
MEASURE = """(() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {bottom: r.bottom + scrollY, right: r.right + scrollX, width: r.width,
            height: r.height, text: el.innerText}; };
  const one = (sel) => { const el = document.querySelector(sel); return el ? box(el) : null; };
  return {
    figures: [...document.querySelectorAll('#memo [data-memo]')]
      .map((el) => ({name: el.dataset.memo, ...box(el)})),
    memo: one('#memo'), buy: one('#memo-buy'), where: one('#memo-where'),
    rent: one('#memo-rent'), payback: one('#memo-payback'), facts: one('#memo-facts'),
    page_width: document.documentElement.scrollWidth,
  };
})()"""
# Desktop: a 1280 x 900 window. Print: A4 less the page's 12 mm side and 14 mm top and
# bottom margins (base.html.j2 @page) at 96 CSS px per inch: 703 x 1017 px.
SCREENS = {"desktop": (1280, 900, "screen"), "print": (703, 1017, "print")}


# The memo's blocks, measured in the browser (getBoundingClientRect over the DevTools
# protocol's Runtime.evaluate): the made-on line, the estimates headline, each heading, each
# table's box, the figures panel and the facts, in page coordinates.
BLOCKS = """(() => {
  const sel = '#made, #memo-estimates, #memo h2, #memo .wide, #memo-figures, #memo-facts';
  return {
    boxes: [...document.querySelectorAll(sel)].map((el) => {
      const r = el.getBoundingClientRect();
      return {name: el.id || el.dataset.box || el.tagName + ':' + el.innerText.slice(0, 20),
              left: r.left + scrollX, top: r.top + scrollY, right: r.right + scrollX,
              bottom: r.bottom + scrollY};
    }),
    page_width: document.documentElement.scrollWidth,
  };
})()"""
WIDTHS = {
    "phone": (390, 844, "screen"),
    "half": (800, 900, "screen"),
    "desktop": (1280, 900, "screen"),
    "print": (703, 1017, "print"),
}


def overlap(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The area two boxes share, in square CSS pixels (0: they do not overlap)."""
    width = min(a["right"], b["right"]) - max(a["left"], b["left"])
    height = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return max(width, 0) * max(height, 0)
