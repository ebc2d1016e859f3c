"""A crafted Sizing link cannot put a link or an image on the page.

Every parameter of a shared Sizing link that the page cannot take is quoted
back in a warning (`dashboard.query_state`). Quoted, it must show as the text
it is: Markdown or HTML in it must never become a clickable link to another
site or an image the browser loads from one.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlparse

import pytest
from playwright.sync_api import Page, expect

from presentation.text import WORD_JOINER
from tests.e2e.test_dashboard import RENDER_TIMEOUT_MS, no_exception, wait_for_idle
from tests.e2e.test_offline import requests_recorded

pytestmark = pytest.mark.e2e

LINK = "[re-authenticate here](https://evil.example)"
IMAGE = "![x](https://evil.example/x.png)"
HTML_IMAGE = "<img src=https://evil.example/y.png>"
CRAFTED = {
    "workload": LINK,
    "image": IMAGE,
    "batch": HTML_IMAGE,
    "filters": f"{LINK} {IMAGE}",
    "precision": f"<a href=https://evil.example/z>{LINK}</a>",
    "budget": HTML_IMAGE,
    "headroom": IMAGE,
    "model": LINK,
}


def test_markdown_and_html_in_a_sizing_link_show_as_text(page: Page, dashboard_url: str) -> None:
    with requests_recorded(page) as requested:
        page.goto(f"{dashboard_url}/sizing_page?{urlencode(CRAFTED)}")
        main = page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", name="Sizing").first).to_be_visible(
            timeout=RENDER_TIMEOUT_MS
        )
        wait_for_idle(page)

        warnings = page.get_by_test_id("stAlertContentWarning")
        expect(warnings.first).to_be_visible()
        # Quoted verbatim, as text; bare addresses carry an invisible word joiner that keeps
        # them from becoming links (`presentation.text.plain`).
        shown = "\n".join(warnings.all_inner_texts()).replace(WORD_JOINER, "")
        for text in (LINK, IMAGE, HTML_IMAGE):
            assert text in shown, shown
        expect(page.locator('a[href*="evil.example"]')).to_have_count(0)
        expect(page.locator('img[src*="evil.example"]')).to_have_count(0)
        assert not [url for url in requested if urlparse(url).hostname == "evil.example"]
        no_exception(page)
