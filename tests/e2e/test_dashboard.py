"""The dashboard in a real browser: the sidebar navigation and a slider move the prediction, a
sweep launched from the sidebar appears. Every page at two widths: `test_pages_at_widths`.

Screenshots land in ``artifacts/screenshots/`` (every page at 1024 and 1440 px, and the
sidebar during and after the sweep). docs/dashboard.md shows copies of the page
screenshots; to refresh them, run the browser suite and copy them over:

    .venv/bin/python -m pytest -q tests/e2e
    cd artifacts/screenshots
    cp models_1440.png ../../docs/screenshots/models.png
    cp sweeps_1440.png ../../docs/screenshots/sweeps.png
    # one screen at 1024x768 and 1440x900 (test_pages_at_widths): the Models page's first,
    # the Sweeps page's compared tables, the Sizing page's bound explained
    cp models_screen_*.png sweeps_*_compared_*.png sizing_how_the_bound_is_made_*.png \
        ../../docs/screenshots/
    cp sizing_decision_1400.png ../../docs/screenshots/sizing.png  # the Dell question
    # docs/screenshots/report.png: the top 2400 px of artifacts/screenshots/report_1400.png
    # docs/screenshots/sizing_answer.png (the README's): the top of the Sizing page on the
    # Dell question for the bundled Intel profile, down to "Memory to buy" (2165 px here)

The tests run in file order and share one server: the sweep test is last because it adds
a run to the database the others read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.e2e.conftest import SliderMove

pytestmark = pytest.mark.e2e

# Each page's address under the server's URL: Streamlit names it after the page's script.
# Where each page lives: the default page (Sizing) at the root (issue 42); its address
# before, "sizing_page", still opens it (app.py), and Streamlit names the others after
# their scripts.
PAGE_PATHS = {"Sizing": "", "Models": "models_page", "Sweeps": "sweeps_page"}
# The smallest workload the network takes (16 is 2^(levels-1)), on a tiny network.
TINY_SWEEP = {"Image sizes": "16", "Batch sizes": "1", "Base filters": "4"}
TINY_STEPS = 2
TINY_RUN_LABEL = re.compile(r"16\s*[x×]\s*16\s*[x×]\s*16")
# How the run picker names it: what, then how it ended.
TINY_RUN_PICKED = re.compile(r"^16\s*[x×]\s*16\s*[x×]\s*16 batch 1, 4 filters, \w+ · ok ·")
# A tiny TF run takes ~20-40 s on a quiet 2-core machine; leave room for a busy one.
SWEEP_TIMEOUT_MS = 300_000
# A first render reads the database and loads the stored models.
RENDER_TIMEOUT_MS = 60_000
# A rerun can close an open dropdown: try again a few times.
CHOOSE_ATTEMPTS = 3
OPTION_TIMEOUT_MS = 10_000
UNDRAWN_CHART = '[data-testid="stVegaLiteChart"]:not(:has(canvas, svg))'
NEXT_FRAME = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
# The widths the sidebar's launcher is checked at while a sweep runs (the last one stays).
SIDEBAR_WIDTHS = (1024, 1400)
VIEWPORT_HEIGHT = 900
# A screenshot taller than this is cut: the docs need the top of a page, not a scroll.
MAX_SHOT_PX = 4000
APP_IDLE = (
    '[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
    '[data-test-script-state="notRunning"]'
)


def wait_for_idle(page: Page) -> None:
    """Wait until the app is connected, no script run is in progress and everything is drawn."""
    page.locator(APP_IDLE).wait_for(timeout=RENDER_TIMEOUT_MS)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=RENDER_TIMEOUT_MS)
    # Vega draws a chart after the script has sent it: wait for every chart's canvas.
    expect(page.locator(UNDRAWN_CHART)).to_have_count(0, timeout=RENDER_TIMEOUT_MS)


def save_whole_page(page: Page, path: Path) -> None:
    """Screenshot the whole page: Streamlit scrolls inside its main area, not the document,
    so grow the window to the content's height (same width, so nothing reflows), then restore.
    """
    viewport = page.viewport_size
    assert viewport is not None, "the browser context sets a viewport (conftest.VIEWPORT)"
    content_px = page.get_by_test_id("stMain").evaluate("main => main.scrollHeight")
    page.set_viewport_size(
        {
            "width": viewport["width"],
            "height": min(max(content_px, viewport["height"]), MAX_SHOT_PX),
        }
    )
    page.evaluate(NEXT_FRAME)  # let the browser lay out the taller window before the shot
    page.screenshot(path=str(path))
    page.set_viewport_size(viewport)


def open_page(page: Page, url: str, title: str, *, by_link: bool = False) -> None:
    """Open one page of the dashboard: at its own address (as a shared link opens it), or
    ``by_link``, at the default page first and then through the sidebar navigation."""
    if by_link:
        page.goto(url)
        wait_for_idle(page)
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    else:
        page.goto(f"{url}/{PAGE_PATHS[title]}")
    expect(page.get_by_test_id("stMain").get_by_role("heading", name=title).first).to_be_visible(
        timeout=RENDER_TIMEOUT_MS
    )
    wait_for_idle(page)
    expect(page.get_by_text("Page not found")).to_have_count(0)


def metric_value(page: Page, label: str) -> Locator:
    """The value of the ``st.metric`` with this label."""
    metric = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )
    return metric.get_by_test_id("stMetricValue")


def sidebar_widget(page: Page, test_id: str, label: str) -> Locator:
    """The sidebar widget of this kind (``stTextInput``, ...) whose label is ``label``."""
    sidebar = page.get_by_test_id("stSidebar")
    return sidebar.get_by_test_id(test_id).filter(
        has=page.get_by_test_id("stWidgetLabel").get_by_text(label, exact=True)
    )


def type_value(page: Page, field: Locator, value: str, *, in_form: bool = False) -> None:
    """Type ``value`` into a text or number input as a user would, and check it stuck.

    A value typed while the app reruns can be overwritten by the rerun's render (seen once
    in CI: a sweep launched with the default image sizes), so wait for the app to be idle
    first. Outside a form, Enter commits the value (a rerun) before the next field is
    touched; inside one it would submit the form, and the value waits for the submit.
    """
    wait_for_idle(page)
    field.fill(value)
    if not in_form:
        field.press("Enter")
        wait_for_idle(page)
    expect(field).to_have_value(value)


def choose(page: Page, combobox: Locator, typed: str, option_name: re.Pattern[str]) -> None:
    """Pick an option of a selectbox by typing part of it.

    Typing opens the list reliably; a bare click does not always (the list closes when the
    page scrolls the box into view). Tried again if a rerun closed the list meanwhile.
    """
    option = page.get_by_role("option", name=option_name)
    for attempt in range(CHOOSE_ATTEMPTS):
        wait_for_idle(page)
        combobox.click()
        combobox.fill(typed)  # the list narrows to the options containing it
        try:
            option.click(timeout=OPTION_TIMEOUT_MS)
            return
        except PlaywrightTimeoutError:
            if attempt + 1 == CHOOSE_ATTEMPTS:
                raise
            page.keyboard.press("Escape")


def no_exception(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_moving_the_batch_size_slider_changes_the_predicted_peak(
    sizing_slider_moved: SliderMove,
) -> None:
    # The Sizing page opened through the sidebar's link and its batch size slider pressed to
    # the end: the tab is shared with test_offline, which checks the addresses it asked.
    moved = sizing_slider_moved
    assert moved.bound_after != moved.bound_before, moved
    assert moved.exceptions_after_move == 0
    assert "GiB" in moved.bound_after, moved.bound_after


def test_a_tiny_sweep_launched_from_the_sidebar_appears_in_the_runs(
    page: Page, dashboard_url: str, screenshots_dir: Path
) -> None:
    open_page(page, dashboard_url, "Sweeps")
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("heading", name="Launch a sweep")).to_be_visible()

    for label, value in TINY_SWEEP.items():
        field = sidebar_widget(page, "stTextInput", label).locator("input")
        type_value(page, field, value, in_form=True)
    steps = sidebar_widget(page, "stNumberInput", "Steps").locator("input")
    lowest = steps.get_attribute("min")
    tiny_steps = str(max(TINY_STEPS, int(float(lowest))) if lowest else TINY_STEPS)
    type_value(page, steps, tiny_steps, in_form=True)
    refit = sidebar.get_by_role("combobox", name="Refit models afterwards")
    choose(page, refit, "no", re.compile(r"^no$", re.IGNORECASE))
    sidebar.get_by_role("button", name="Launch sweep").click()

    # While it runs: "N / M points" over a progress bar, and a way to cancel. Whole text: the
    # sweep's log shown beside it has lines like "0/1 points, now 16 batch 1".
    expect(sidebar.get_by_text(re.compile(r"^\d+ / 1 points?$"))).to_be_visible(
        timeout=RENDER_TIMEOUT_MS
    )
    expect(sidebar.get_by_test_id("stProgress")).to_be_visible()
    expect(sidebar.get_by_role("button", name="Cancel sweep")).to_be_visible()
    # At both widths the issue names: the progress never claims "0 s left" while the point
    # runs, and Cancel is whole.
    for width in SIDEBAR_WIDTHS:
        page.set_viewport_size({"width": width, "height": VIEWPORT_HEIGHT})
        expect(sidebar).not_to_contain_text(re.compile(r"(?<!\d)0 s left"))
        cancel = sidebar.get_by_role("button", name="Cancel sweep")
        cancel.scroll_into_view_if_needed()
        expect(cancel).to_be_in_viewport(ratio=1)
        sidebar.screenshot(path=str(screenshots_dir / f"sidebar_sweep_running_{width}.png"))

    # When it ends the sidebar says how; anything but "finished" fails with its message.
    outcome = sidebar.get_by_text(
        re.compile(r"(Done: the last sweep finished|Last sweep (was cancelled|failed|crashed))")
    )
    expect(outcome).to_be_visible(timeout=SWEEP_TIMEOUT_MS)
    assert outcome.inner_text().startswith("Done: the last sweep finished, 1 / 1 points"), (
        outcome.inner_text()
    )
    wait_for_idle(page)
    no_exception(page)
    sidebar.screenshot(path=str(screenshots_dir / "sidebar_sweep_finished.png"))

    # The open page shows the new run without a reload: newest first in the runs table, and
    # measured ("ok"), with its memory timeline, in the run picker.
    main = page.get_by_test_id("stMain")
    runs_table = main.get_by_test_id("stDataFrame").first
    new_cells = runs_table.locator('[role="gridcell"]').filter(has_text=TINY_RUN_LABEL)
    expect(new_cells.first).to_be_attached(timeout=RENDER_TIMEOUT_MS)
    run_picker = main.get_by_role("combobox", name="Run")
    choose(page, run_picker, "16×16×16 batch 1, 4 filters", TINY_RUN_PICKED)
    expect(run_picker).to_have_value(TINY_RUN_PICKED)
    wait_for_idle(page)
    no_exception(page)
    save_whole_page(page, screenshots_dir / "sweeps_after_sweep.png")
