"""Finding text the browser cut: a script run in the page, and what it reports.

Issue 26 (finding 9) measured at 1024 px: a select showing "floa" for
float32, a label wrapped as "Headroo m (%)", "hybrid: SR given a" cut by its
select, a formula running off the page. `CLIPPED_TEXT_JS` looks for each kind
in the laid-out page (the sidebar included):

* **cut**: an element holding text of its own whose content is wider than its
  box while its overflow is hidden or its text ends in an ellipsis, or whose text
  runs past the nearest ancestor that hides overflow (a select's value, a label,
  a button, a metric);
* **off the page**: text whose right edge lies past the right edge of the
  window (a formula or a line of code that neither wraps nor scrolls);
* **broken word**: a word of a widget label or a select's value laid out on
  two lines (a label wrapped mid-word).

Charts (Vega draws text in SVG) and interactive tables (Glide draws them on a
canvas) are not HTML text and are left out here: `tests.e2e.drawn_defects` checks
them (static tables, ``st.table``, are HTML and checked), and so
is text inside an element that scrolls sideways on purpose (``st.code``):
scrolling shows all of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from playwright.sync_api import Page

# Layout rounds to device pixels: a box a pixel narrower than its text is not a cut.
SLACK_PX = 2

CLIPPED_TEXT_JS = """
(slack) => {
  const found = [];
  const skip = '[data-testid="stVegaLiteChart"], [data-testid="stDataFrame"], '
    + 'svg, canvas, script, style, [aria-hidden="true"]';
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    // Screen-reader-only text ("Skip to main content") is a 1 px box on purpose.
    return r.width > 1 && r.height > 1 && cs.visibility !== 'hidden' && cs.display !== 'none';
  };
  const scrollsSideways = (el) => {
    for (let p = el; p && p !== document.body; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if ((cs.overflowX === 'auto' || cs.overflowX === 'scroll') && p.scrollWidth > p.clientWidth)
        return true;
    }
    return false;
  };
  const ownText = (el) => [...el.childNodes]
    .filter((n) => n.nodeType === Node.TEXT_NODE)
    .map((n) => n.textContent).join('').trim();
  const where = (el) => el.closest('[data-testid="stSidebar"]') ? 'sidebar' : 'main';
  const width = document.documentElement.clientWidth;
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest(skip) || !visible(el)) continue;
    const text = ownText(el);
    if (!text) continue;
    const cs = getComputedStyle(el);
    const hides = ['hidden', 'clip'].includes(cs.overflowX) || cs.textOverflow === 'ellipsis';
    if (hides && el.scrollWidth > el.clientWidth + slack) {
      found.push({kind: 'cut', where: where(el), text: el.innerText.trim().slice(0, 80),
                  detail: `${el.scrollWidth} px of text in ${el.clientWidth} px`});
      continue;
    }
    // The text itself, not its box: a select's value sits in a box as wide as its text,
    // inside a parent that hides what does not fit ("floa" for float32).
    const range = document.createRange();
    range.selectNodeContents(el);
    const r = range.getBoundingClientRect();
    let cutBy = null;
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const pcs = getComputedStyle(p);
      if (['auto', 'scroll'].includes(pcs.overflowX)) break;  // scrolls: all of it can be seen
      if (['hidden', 'clip'].includes(pcs.overflowX)) {
        const box = p.getBoundingClientRect();
        // A 1 px clipping box is screen-reader text on purpose (KaTeX's MathML copy).
        if (box.width > 1 && box.height > 1 && r.right > box.right + slack) cutBy = box;
        break;
      }
    }
    if (cutBy) {
      found.push({kind: 'cut', where: where(el), text: text.slice(0, 80),
                  detail: `text to ${Math.round(r.right)} px, its box ends at `
                    + `${Math.round(cutBy.right)}`});
      continue;
    }
    if (r.right > width + slack && !scrollsSideways(el)) {
      found.push({kind: 'off the page', where: where(el), text: text.slice(0, 80),
                  detail: `right edge at ${Math.round(r.right)} px of ${width}`});
    }
  }
  const labels = document.querySelectorAll(
    '[data-testid="stWidgetLabel"], [data-baseweb="select"] [value], '
    + '[data-baseweb="select"] div[title], [data-testid="stMetricLabel"]');
  for (const label of labels) {
    if (!visible(label)) continue;
    const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const words = node.textContent.matchAll(/\\S+/g);
      for (const word of words) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const lines = new Set([...range.getClientRects()]
          .filter((box) => box.width > 0).map((box) => Math.round(box.top)));
        if (lines.size > 1) {
          found.push({kind: 'broken word', where: where(label), text: word[0],
                      detail: `in "${label.innerText.trim().slice(0, 60)}"`});
        }
      }
    }
  }
  return found;
}
"""


@dataclass(frozen=True)
class ClippedText:
    """One piece of text the browser did not show whole."""

    kind: str  # "cut", "off the page" or "broken word"
    where: str  # "main" or "sidebar"
    text: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} ({self.where}): {self.text!r}, {self.detail}"


def clipped_text(page: Page) -> list[ClippedText]:
    """Every piece of text on ``page`` as laid out now that is cut, off the page or broken."""
    found = page.evaluate(CLIPPED_TEXT_JS, SLACK_PX)
    return [ClippedText(**item) for item in found]
