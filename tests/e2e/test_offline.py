"""The dashboard asks nothing of the internet: every request a page makes goes to its server.

Each page is opened in a fresh tab that records every request and websocket it opens,
rendered to the end, and on the Sizing page a slider moved; every address must be the
server's (127.0.0.1 or localhost) or inline (``data:``, ``blob:``). Until issue 38
(item 7) the tab's icon, a Material symbol, was fetched from fonts.gstatic.com on every
page: a visit told Google, and offline the tab had no icon. The server runs with the
shipped .streamlit/config.toml, so its usage statistics setting is checked too: turned on,
every new tab fetches https://data.streamlit.io/metrics.json.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_dashboard import (
    RENDER_TIMEOUT_MS,
    metric_value,
    no_exception,
    open_page,
    wait_for_idle,
)

pytestmark = pytest.mark.e2e

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
NETWORK_SCHEMES = {"http", "https", "ws", "wss"}
INLINE_SCHEMES = {"data", "blob"}
# The tab's icon until Streamlit's page config replaces it (its index.html's own).
DEFAULT_FAVICON = "./favicon.png"
FAVICON = "link[rel='shortcut icon']"


def is_local(url: str) -> bool:
    """Whether fetching ``url`` stays on this machine (or needs no fetch at all)."""
    parts = urlsplit(url)
    if parts.scheme in INLINE_SCHEMES:
        return True
    return parts.scheme in NETWORK_SCHEMES and parts.hostname in LOCAL_HOSTS


def record_requests(page: Page) -> list[str]:
    """Every address ``page`` asks for from now on: requests (its workers' too) and websockets."""
    urls: list[str] = []
    page.context.on("request", lambda request: urls.append(request.url))
    page.on("websocket", lambda socket: urls.append(socket.url))
    return urls


def favicon_url(page: Page) -> str:
    """The tab's icon once the page config has set it, as the browser will fetch it.

    The browser fetches the icon on its own; its request event can reach the test after
    the checks, so the address is read from the page as well.
    """
    icon = page.locator(FAVICON)
    expect(icon).not_to_have_attribute("href", DEFAULT_FAVICON, timeout=RENDER_TIMEOUT_MS)
    return str(icon.evaluate("link => link.href"))


def outside(urls: list[str]) -> list[str]:
    """The addresses that leave the machine, each once (shortened: a data: URL can be long)."""
    return sorted({url[:200] for url in urls if not is_local(url)})


@pytest.mark.parametrize("title", ["Models", "Sizing", "Sweeps"])
def test_a_page_asks_only_its_own_server(page: Page, dashboard_url: str, title: str) -> None:
    urls = record_requests(page)
    open_page(page, dashboard_url, title)
    no_exception(page)
    urls.append(favicon_url(page))
    assert any(url.startswith(dashboard_url) for url in urls), "no request was recorded"
    assert outside(urls) == [], f"the {title} page reached outside: {outside(urls)}"


def test_moving_a_slider_asks_only_the_server(page: Page, dashboard_url: str) -> None:
    open_page(page, dashboard_url, "Sizing")
    urls = record_requests(page)
    predicted = metric_value(page, "Upper bound")
    before = predicted.inner_text()
    thumb = page.get_by_test_id("stSlider").filter(has_text="Batch size").get_by_role("slider")
    thumb.focus()
    thumb.press("End")  # the largest batch size offered: another prediction, redrawn charts

    expect(predicted).not_to_have_text(before, timeout=RENDER_TIMEOUT_MS)
    wait_for_idle(page)
    no_exception(page)
    urls.append(favicon_url(page))
    assert outside(urls) == [], f"moving the slider reached outside: {outside(urls)}"
