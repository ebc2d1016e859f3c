"""The dashboard asks nothing of the internet: every request a page makes goes to its server.

Each page is opened in a tab that records every request and websocket from before the
page's first one, rendered to the end, and on the Sizing page a slider moved (that tab is conftest's
`sizing_slider_moved`, whose moved prediction test_dashboard reads); every address must be the
server's (127.0.0.1 or localhost) or inline (``data:``, ``blob:``). Every page's load at
each width is recorded the same way by test_pages_at_widths, which opens each page once a
width anyway (a page load is seconds of browser and server CPU). Until issue 38
(item 7) the tab's icon, a Material symbol, was fetched from fonts.gstatic.com on every
page: a visit told Google, and offline the tab had no icon. The server runs with the
shipped .streamlit/config.toml, so its usage statistics setting is checked too: turned on,
every new tab fetches https://data.streamlit.io/metrics.json.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, WebSocket, expect

from tests.e2e.conftest import SliderMove
from tests.e2e.test_dashboard import RENDER_TIMEOUT_MS

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


@contextlib.contextmanager
def requests_recorded(page: Page) -> Iterator[list[str]]:
    """Every address ``page`` asks for inside the block: requests (its workers' too) and
    websockets. The listeners go with the block: the tab is lent again (`SharedTab`)."""
    urls: list[str] = []

    def on_request(request: Request) -> None:
        urls.append(request.url)

    def on_websocket(socket: WebSocket) -> None:
        urls.append(socket.url)

    page.context.on("request", on_request)
    page.on("websocket", on_websocket)
    try:
        yield urls
    finally:
        page.context.remove_listener("request", on_request)
        page.remove_listener("websocket", on_websocket)


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


def test_the_sizing_page_asks_only_its_own_server(
    sizing_slider_moved: SliderMove, dashboard_url: str
) -> None:
    # The tab test_dashboard's slider test reads: opened at the root (the Sizing page), then
    # through the sidebar's link, recording from before the first request.
    urls = sizing_slider_moved.load_urls
    assert sizing_slider_moved.exceptions_after_load == 0
    assert any(url.startswith(dashboard_url) for url in urls), "no request was recorded"
    assert outside(urls) == [], f"the Sizing page reached outside: {outside(urls)}"


def test_moving_a_slider_asks_only_the_server(sizing_slider_moved: SliderMove) -> None:
    # Recorded from the slider's move until the page was drawn again (the bound changed).
    moved = sizing_slider_moved
    assert moved.bound_after != moved.bound_before, moved
    assert moved.exceptions_after_move == 0
    assert outside(moved.move_urls) == [], (
        f"moving the slider reached outside: {outside(moved.move_urls)}"
    )
