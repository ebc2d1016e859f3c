"""Finding what the clipped-text check cannot see: defects of charts and interactive tables.

Issue 42 (point 8) walked the dashboard at 1440 px and found, in what `clipped_text`
leaves out (Vega draws charts in SVG, Glide draws tables on a canvas): a chart
squashed to a line (its y axis reading only "0"), a y title cut to "log sca", two
rule labels drawn over each other, and a table whose last columns lay past the right
edge. `DRAWN_DEFECTS_JS` looks for each kind in the laid-out main area. The tables
that compare machines or frameworks only fill on a database of several machine
profiles: the pages are checked on every bundled one (conftest's `every_bundle_server`).

What it looks for:

* **degenerate plot**: a y axis shorter than `MIN_PLOT_PX`, or with fewer than two
  distinct tick labels;
* **cut axis title**: an axis title Vega shortened (it ends in "…") or drawn past its
  chart's box;
* **overlapping labels**: two texts a chart's marks draw (a rule's label, a point's)
  whose boxes overlap;
* **line styles alike**: a legend of dashed lines whose samples are shorter than two
  periods of their dash (Vega's ~10 px default), so the styles cannot be told apart;
* **table past the edge**: an interactive table whose columns scroll past its box, or a
  table whose box ends past the window's right edge (not one in a closed expander, such
  as the Sweeps page's "More columns": a reader opens it to scroll it).
"""

from __future__ import annotations

from playwright.sync_api import Page

# Layout rounds to device pixels: a pixel or two of overlap or overhang is not a defect.
SLACK_PX = 2
# A y axis shorter than this draws its marks on a line.
MIN_PLOT_PX = 60

DRAWN_DEFECTS_JS = """
([slack, minPlot]) => {
  const found = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const width = document.documentElement.clientWidth;
  const overlap = (a, b) => a.left < b.right - slack && b.left < a.right - slack
    && a.top < b.bottom - slack && b.top < a.bottom - slack;
  main.querySelectorAll('[data-testid="stVegaLiteChart"]').forEach((chart, index) => {
    const name = `chart ${index + 1}`;
    const box = chart.getBoundingClientRect();
    if (box.width < 2 || box.height < 2) return;
    for (const axis of chart.querySelectorAll('g.role-axis')) {
      const label = axis.getAttribute('aria-label') || '';
      const title = axis.querySelector('g.role-axis-title text');
      if (title) {
        const text = title.textContent;
        const r = title.getBoundingClientRect();
        // Vega sets a y title a few pixels into the chart's left padding: not a cut.
        if (text.endsWith('…') || r.left < box.left - 3 * slack || r.right > box.right + slack
            || r.top < box.top - slack || r.bottom > box.bottom + slack)
          found.push(`${name}: axis title cut: "${text}"`);
      }
      if (!label.startsWith('Y-axis')) continue;
      const domain = axis.querySelector('g.role-axis-domain line, g.role-axis-domain path');
      const ticks = new Set([...axis.querySelectorAll('g.role-axis-label text')]
        .map((t) => t.textContent));
      const high = domain ? domain.getBoundingClientRect().height : 0;
      if (domain && high < minPlot)
        found.push(`${name}: plot ${Math.round(high)} px high (${label})`);
      else if (ticks.size < 2)
        found.push(`${name}: y axis reads only ${[...ticks].join(', ') || 'nothing'}`);
    }
    // A legend of line styles: each sample must be long enough to show its dash (two
    // periods), or six dashed models read as six solid lines.
    for (const legend of chart.querySelectorAll('g.role-legend')) {
      const samples = [...legend.querySelectorAll('g.role-legend-symbol path')]
        .map((s) => [s.getAttribute('stroke-dasharray') || '', s.getBoundingClientRect().width])
        .filter(([dash]) => dash && dash !== 'none');
      if (new Set(samples.map(([dash]) => dash)).size < 2) continue;
      for (const [dash, long] of samples) {
        const period = dash.split(/[ ,]+/).map(Number).reduce((a, b) => a + b, 0);
        if (long + slack < 2 * period) {
          found.push(`${name}: legend line ${Math.round(long)} px shows not two periods of `
            + `its dash ${dash}: its styles cannot be told apart`);
          break;
        }
      }
    }
    const texts = [...chart.querySelectorAll('g.role-mark text')]
      .filter((t) => t.textContent.trim())
      .map((t) => [t.textContent, t.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && r.height > 0);
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (overlap(texts[i][1], texts[j][1]))
          found.push(`${name}: labels overlap: "${texts[i][0]}" and "${texts[j][0]}"`);
  });
  main.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stTable"]')
    .forEach((table, index) => {
      const r = table.getBoundingClientRect();
      // A closed expander's table ("More columns: ...") is not shown until opened.
      if (r.width < 2 || table.closest('details:not([open])')) return;
      const heads = [...table.querySelectorAll('[role="columnheader"], thead th')]
        .map((h) => h.textContent.trim()).slice(0, 3).join(' | ');
      const scroller = table.querySelector('.dvn-scroller') || table;
      const hidden = scroller.scrollWidth - scroller.clientWidth;
      if (hidden > slack)
        found.push(`table ${index + 1} (${heads}): ${hidden} px of columns past its edge`);
      if (r.right > width + slack)
        found.push(`table ${index + 1} (${heads}): ends ${Math.round(r.right - width)} px `
          + 'past the window');
    });
  return found;
}
"""


def drawn_defects(page: Page) -> list[str]:
    """Every chart and table defect in the main area of ``page`` as laid out now, in words."""
    return page.evaluate(DRAWN_DEFECTS_JS, [SLACK_PX, MIN_PLOT_PX])
