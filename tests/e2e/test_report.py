"""The downloadable sizing report in a real browser, opened from disk with the network cut off.

``memplan report`` writes the Dell–Intel study's question (240x240x144
at batch 16, 256 GiB, 20% headroom) on the bundled Intel reference; Debian's
chromium opens the file at 1024 and 1400 px wide with every request that is
not the file itself refused and recorded: none may be attempted. The headline
and the inline SVG chart must show, and nothing may be wider than the window.
Screenshots: ``artifacts/screenshots/report_{1024,1400}.png`` (whole page).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from core import database
from memplan import cli
from profiling import exchange

pytestmark = pytest.mark.e2e

WIDTHS = (1024, 1400)
HEIGHT = 900
# The buyer's figure first (issue 26 finding 6), then the verdict on the question's budget.
BUY_HEADLINE = "Memory to buy: 256 GB"
HEADLINE = "Predicted to fit, 12x beyond the largest measured run: verify first"
# The chart is drawn as wide as the text column, at least this wide at 1024 px.
MIN_CHART_PX = 600
# A file on disk with nothing to fetch: seconds would already be slow.
TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Dell question's report, written by the CLI from a database of the bundled runs."""
    folder = tmp_path_factory.mktemp("report-e2e")
    db = folder / "memplan.duckdb"
    database.ensure_database(db)
    for runs, samples in database.BUNDLED_EXPORTS:
        exchange.import_runs(db, runs, samples)
    output = folder / "dell.html"
    question = ["--image-size", "240x240x144", "--batch-size", "16", "--budget", "256GiB"]
    chosen = ["--machine", "9b59349f74", "--model", "symbolic"]
    written = cli.main(["report", *question, *chosen, "--db", str(db), "--output", str(output)])
    assert written == 0
    return output


@pytest.fixture
def offline_page(browser) -> Iterator[tuple[Page, list[str]]]:
    """A tab that refuses every request but a file:// one; the refused URLs, in order."""
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": HEIGHT})
    context.set_default_timeout(TIMEOUT_MS)
    attempted: list[str] = []

    def refuse_the_network(route: Route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    context.route("**/*", refuse_the_network)
    try:
        yield context.new_page(), attempted
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_report_opens_offline_with_its_headline_and_chart(
    offline_page: tuple[Page, list[str]], report_file: Path, screenshots_dir: Path, width: int
) -> None:
    page, attempted = offline_page
    page.set_viewport_size({"width": width, "height": HEIGHT})

    page.goto(report_file.as_uri(), wait_until="load")

    expect(page.get_by_role("heading", level=1)).to_have_text(BUY_HEADLINE)
    expect(page.locator("#decision h2")).to_have_text(HEADLINE)
    chart = page.locator("#chart svg")
    expect(chart).to_be_visible()
    box = chart.bounding_box()
    assert box is not None and box["width"] >= MIN_CHART_PX and box["height"] > 0
    expect(
        page.locator("#chart svg text").filter(has_text="published peak: almost 1 TB")
    ).to_have_count(1)
    expect(page.locator("#runs-table tbody tr")).to_have_count(46)
    wider = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
    assert not wider, "something on the report is wider than the window"
    page.screenshot(path=str(screenshots_dir / f"report_{width}.png"), full_page=True)
    assert attempted == [], f"the report asked the network for {attempted}"
