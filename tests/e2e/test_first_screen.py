"""The first screen (issue 42, point 1), in a real browser at 1440x900 and 1024x768: the
dashboard's root is the Sizing page, and without scrolling it shows the question, in words,
and its answer: the memory to buy for a buyer, the largest image for a researcher who asks
for it. Before, it opened on Models, and on Sizing "256 GB" sat at ~770 of 900 px.

Screenshots: ``artifacts/screenshots/sizing_first_screen_{1440,1024}.png`` (copied to
docs/screenshots/ for docs/dashboard.md) and ``sizing_first_screen_image_{1440,1024}.png``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.test_dashboard import RENDER_TIMEOUT_MS, metric_value, no_exception, wait_for_idle

pytestmark = pytest.mark.e2e

SCREENS = ((1440, 900), (1024, 768))
QUESTION = {"workload": "unet3d", "image": "128", "batch": "16", "budget": "12"}


def on_first_screen(page: Page, element: Locator) -> None:
    """``element`` is wholly inside the window as the page opens, before any scrolling."""
    expect(element).to_be_visible(timeout=RENDER_TIMEOUT_MS)
    box = element.bounding_box()
    viewport = page.viewport_size
    assert box is not None and viewport is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], box
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], box


def open_root(page: Page, url: str, size: tuple[int, int], **params: str) -> Locator:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"{url}/?{urlencode(params)}")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="Sizing").first).to_be_visible(
        timeout=RENDER_TIMEOUT_MS
    )
    wait_for_idle(page)
    no_exception(page)
    return main


@pytest.mark.parametrize("size", SCREENS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_the_root_opens_on_the_buyers_question_and_its_answer(
    page: Page, dashboard_url: str, screenshots_dir: Path, size: tuple[int, int]
) -> None:
    main = open_root(page, dashboard_url, size, **QUESTION)

    on_first_screen(page, main.get_by_role("heading", name="128^3 at batch 16"))
    on_first_screen(page, metric_value(page, "Memory to buy"))
    expect(metric_value(page, "Memory to buy")).to_have_text(re.compile(r"^\d+ GB$"))
    on_first_screen(page, main.get_by_text("Host RAM to buy"))
    page.screenshot(path=str(screenshots_dir / f"sizing_first_screen_{size[0]}.png"))


@pytest.mark.parametrize("size", SCREENS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_a_researcher_asking_the_largest_image_gets_it_on_the_first_screen(
    page: Page, dashboard_url: str, screenshots_dir: Path, size: tuple[int, int]
) -> None:
    open_root(page, dashboard_url, size, **QUESTION, ask="image")

    on_first_screen(page, metric_value(page, "Largest cube at batch 16"))
    budget = page.get_by_test_id("stMain").get_by_test_id("stNumberInput")
    on_first_screen(page, budget.filter(has_text="Memory budget (GiB)"))  # the budget asked
    page.screenshot(path=str(screenshots_dir / f"sizing_first_screen_image_{size[0]}.png"))
