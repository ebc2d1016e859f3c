"""Every page at a laptop's 1024 px and a desktop's 1440 px, in a real browser.

Every page (Models, Sizing, Sweeps, the sidebar beside each) renders without an
exception, is screenshot at both widths into ``artifacts/screenshots/``
(``sizing_1024.png``, ...) and fails on any text the browser cut, pushed off the
page or broke mid-word (`tests.e2e.clipped_text`; issue 26, finding 9), and on any
chart or table defect it cannot see (`tests.e2e.drawn_defects`; issue 42, point 8): a
plot squashed to a line, an axis title cut, chart labels drawn over each other, a
legend's dashed lines too short to tell apart, a table's columns past its edge or the
window's. The window is a laptop's 1024x768 and a desktop's 1440x900.

At each width: every legend entry of the charts checked here lies inside its
chart (not cut at the edge), the published study's reference points are drawn
on the Models page, and the tables a reader reads first fit beside the sidebar
with every header shown (their other columns are named on an expander).

One server (conftest's `every_bundle_server`: every bundled profile, so the tables that
compare machines and frameworks are drawn), one page load per page and width, each
recorded as test_offline records its tabs: every address it asks must be the server's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from core.published import PUBLISHED_POINTS
from tests.e2e.clipped_text import clipped_text
from tests.e2e.drawn_defects import drawn_defects
from tests.e2e.test_dashboard import no_exception, open_page, save_whole_page
from tests.e2e.test_offline import favicon_url, outside, requests_recorded

pytestmark = pytest.mark.e2e

WIDTHS_PX = (1024, 1440)
PAGES = ("Models", "Sizing", "Sweeps")
# A laptop's screen and a desktop's: the window each width is seen in.
HEIGHT_PX = {1024: 768, 1440: 900}
# Where a reader looks past the first screen, shot as one screen from its heading
# (``sweeps_machines_compared_1024.png``, ...; docs/screenshots/ holds copies).
SECTIONS = {
    "Sweeps": ("Machines compared", "Frameworks compared"),
    "Sizing": ("How the bound is made",),
}
# Vega draws text a pixel or so past its measured box; more than this is a cut label.
SLACK_PX = 2
# A canvas grid or chart scrolled into view draws on the next frames: wait for two.
NEXT_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
CHART = '[data-testid="stVegaLiteChart"]'
TABLE = '[data-testid="stDataFrame"]'
HTML_TABLE = '[data-testid="stTable"]'
# Glide's scrolling element: wider content than box means columns past the right edge.
SCROLLER = ".dvn-scroller"
ERROR_HEADERS = ["model", "MAPE %", "sd", "R²", "worst %", "ext. MAPE", "ext. worst"]
RUNS_HEADERS = [
    "run",
    "status",
    "image",
    "batch",
    "steps",
    "HWM (GiB)",
    "sampled (GiB)",
]
TIMELINE_LEGEND = [
    "resident memory (sampled)",
    "sampled peak",
    "kernel high-water mark",
    "after framework import",
    "training step",
]


def chart_with(page: Page, text: str) -> Locator:
    """The chart whose drawing (Vega's SVG) holds this text."""
    return page.get_by_test_id("stMain").locator(CHART).filter(has_text=text).first


def assert_inside(chart: Locator, labels: list[str]) -> None:
    """Each label is drawn, and wholly inside its chart (a label past the edge is cut)."""
    box = chart.bounding_box()
    assert box is not None
    for label in labels:
        text = chart.locator("svg text").filter(has_text=label).first
        expect(text).to_be_visible()
        drawn = text.bounding_box()
        assert drawn is not None
        assert drawn["x"] + drawn["width"] <= box["x"] + box["width"] + SLACK_PX, label
        assert drawn["x"] >= box["x"] - SLACK_PX, label


def assert_table_fits(table: Locator, headers: list[str]) -> None:
    """The table shows exactly these headers, none of them past its right edge."""
    table.scroll_into_view_if_needed()
    header = table.locator('[role="columnheader"]')
    expect(header.first).to_be_attached()  # the grid draws its headers after the page run
    shown = [h.inner_text().strip() for h in header.all()]
    assert shown == headers
    overflow = table.locator(SCROLLER).evaluate("box => box.scrollWidth - box.clientWidth")
    assert overflow <= SLACK_PX, f"{overflow} px of columns past the right edge: {headers}"


def assert_html_table_fits(table: Locator, headers: list[str]) -> None:
    """The static (HTML) table shows exactly these headers and nothing past its right edge;
    its cells wrap, and the clipped-text check reads them as the rest of the page."""
    table.scroll_into_view_if_needed()
    shown = [h.inner_text().strip() for h in table.locator("thead th").all()]
    assert shown == headers
    overflow = table.evaluate("box => box.scrollWidth - box.clientWidth")
    assert overflow <= SLACK_PX, f"{overflow} px of columns past the right edge: {headers}"


def models_page_reads_whole(page: Page) -> None:
    """The Models page's legends and the published study's points are inside their charts,
    and the errors table shows every header."""
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="Beside the published study")).to_be_visible()
    published = chart_with(page, "image x batch (million voxels, log scale)")
    published.scroll_into_view_if_needed()
    assert_inside(
        published,
        [point.label for point in PUBLISHED_POINTS]
        + ["our runs (measured)", "our model at the study's configuration", "published peak"]
        + ["published server sizes", "symbolic regression (gplearn)"],
    )
    expect(main.get_by_text("the published figures are context", exact=False)).to_be_visible()
    parity = chart_with(page, "predicted = measured")
    assert_inside(parity, ["predicted = measured", "symbolic regression (gplearn)"])
    assert_inside(chart_with(page, "no error"), ["no error", "image side"])
    assert_html_table_fits(main.locator(HTML_TABLE).filter(has_text="MAPE").first, ERROR_HEADERS)


def sweeps_page_reads_whole(page: Page) -> None:
    """The Sweeps page's runs table shows every header, the timeline its legend, and the
    sidebar's launch button is whole once scrolled to (after a sweep the sidebar holds its
    result above the form)."""
    main = page.get_by_test_id("stMain")
    assert_table_fits(main.locator(TABLE).first, RUNS_HEADERS)
    expect(main.get_by_text("More columns: sweep", exact=False)).to_be_visible()
    timeline = chart_with(page, "time since the child started")
    timeline.scroll_into_view_if_needed()
    assert_inside(timeline, TIMELINE_LEGEND)
    launch = page.get_by_test_id("stSidebar").get_by_role("button", name="Launch sweep")
    launch.scroll_into_view_if_needed()
    expect(launch).to_be_in_viewport(ratio=1)


def slug(words: str) -> str:
    """``Machines compared`` -> ``machines_compared``."""
    return "_".join(words.lower().split())


def shoot_section(page: Page, section: str, path: Path) -> None:
    """One screen from the heading (or, opened, the expander) named ``section``."""
    main = page.get_by_test_id("stMain")
    heading = main.get_by_role("heading", name=section)
    if heading.count():
        heading.first.evaluate("node => node.scrollIntoView({block: 'start'})")
    else:  # an expander: the first one, opened, in the middle of the screen
        expander = main.get_by_test_id("stExpander").filter(has_text=section).first
        expander.locator("summary").click()
        expect(expander.locator("details")).to_have_attribute("open", "")
        expander.evaluate("node => node.scrollIntoView({block: 'center'})")
    page.evaluate(NEXT_FRAMES_JS)
    page.screenshot(path=str(path))


# What each page must show whole beyond uncut text (the Sizing page's decision has its own
# browser test, `test_sizing_decision`).
READS_WHOLE = {"Models": models_page_reads_whole, "Sweeps": sweeps_page_reads_whole}


@pytest.mark.parametrize("width", WIDTHS_PX)
@pytest.mark.parametrize("title", PAGES)
def test_every_page_renders_whole_at_this_width(
    page: Page, every_bundle_url: str, screenshots_dir: Path, title: str, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": HEIGHT_PX[width]})
    with requests_recorded(page) as urls:
        open_page(page, every_bundle_url, title)
        no_exception(page)
        # Offline too (test_offline): each page load asks only its own server, icon included.
        urls.append(favicon_url(page))
    assert any(url.startswith(every_bundle_url) for url in urls), "no request was recorded"
    assert outside(urls) == [], f"the {title} page reached outside: {outside(urls)}"
    page.screenshot(path=str(screenshots_dir / f"{title.lower()}_screen_{width}.png"))
    if title in READS_WHOLE:
        READS_WHOLE[title](page)
    save_whole_page(page, screenshots_dir / f"{title.lower()}_{width}.png")
    for section in SECTIONS.get(title, ()):
        shoot_section(
            page, section, screenshots_dir / f"{title.lower()}_{slug(section)}_{width}.png"
        )

    found = clipped_text(page)
    drawn = drawn_defects(page)

    assert not found, "\n".join(str(item) for item in found)
    assert not drawn, "\n".join(drawn)
