"""Fixtures for the browser tests: a real ``streamlit run app.py`` and Debian's chromium.

The server runs against a private copy of a database holding the bundled runs
and the bundled evaluation, on a free port on 127.0.0.1, with its own HOME (so
nothing in the developer's ``~/.streamlit`` changes what is tested). Its output
goes to a file, not a pipe (a full pipe would block the server), and every
failing test shows that log. Chromium is Debian's package, never Playwright's
own download: ``.ci/run`` installs it; outside CI a missing chromium skips the
suite with the command that installs it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core import database
from profiling import jobstatus, launcher
from tests.conftest import built_once, every_bundle_database, reference_database
from tests.slurm_cluster import stop_process_group

REPO_ROOT = Path(__file__).resolve().parents[2]
APP_PATH = REPO_ROOT / "app.py"
ARTIFACTS_DIR = REPO_ROOT / "artifacts"
SCREENSHOTS_DIR = ARTIFACTS_DIR / "screenshots"
FAILURES_DIR = ARTIFACTS_DIR / "e2e-failures"

CHROMIUM_INSTALL = "sudo apt-get install -y chromium"
# Flags for a headless chromium in a container: no sandbox (root, no user
# namespaces), no GPU, /tmp instead of a small /dev/shm, no update checks.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--headless=new",
]
# The screenshots the README and docs/dashboard.md show are taken at this size.
VIEWPORT = {"width": 1400, "height": 900}
# Starting Streamlit imports pandas, Altair and DuckDB: seconds, more on a busy 2-core box.
SERVER_START_TIMEOUT_S = 90.0
HEALTH_POLL_S = 0.25
SERVER_STOP_TIMEOUT_S = 10.0
# What a Playwright wait may take by default (ms): a first render reads the database.
DEFAULT_TIMEOUT_MS = 30_000
LOG_TAIL_CHARS = 8_000


def chromium_path() -> str | None:
    """Debian's chromium, if installed."""
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200 and response.read().strip() == b"ok"
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return text[-LOG_TAIL_CHARS:]


class StreamlitServer:
    """A running ``streamlit run app.py``: its URL, database and log."""

    def __init__(self, url: str, db_path: Path, log_path: Path, process: subprocess.Popen):
        self.url = url
        self.db_path = db_path
        self.log_path = log_path
        self.process = process

    def log(self) -> str:
        """The server's output, and the log of a sweep it launched, if any (tails)."""
        text = _tail(self.log_path)
        job_log = jobstatus.state_dir(self.db_path) / jobstatus.LOG_FILE
        if job_log.exists():
            text += f"\n--- launched sweep's log ({job_log}) ---\n{_tail(job_log)}"
        return text


@pytest.fixture(scope="session")
def e2e_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the bundled reference runs and the bundled evaluation (built once)."""
    # The same file as the page tests' reference_db_template, shared by every xdist worker.
    return built_once(tmp_path_factory, "reference.duckdb", reference_database)


@pytest.fixture(scope="session")
def dashboard_server(
    e2e_db_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StreamlitServer]:
    """``streamlit run app.py`` on a free port against a private copy of the reference database.

    One server for the session (each start costs seconds). test_dashboard's sweep adds
    one run to its database, the last of its module's tests; the browser files after it
    (one worker runs them in file order) check nothing that one more run changes. The
    GPU page's tests have a server of their own (`gpu_server`).
    """
    with serve(e2e_db_template, tmp_path_factory.mktemp("e2e-server")) as server:
        yield server


@pytest.fixture(scope="session")
def every_bundle_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    """``streamlit run app.py`` against every bundled run and evaluation: eight machine
    profiles, as a fresh checkout's database holds. The tables and charts that compare
    machines or frameworks have a column or a line per profile, so only a database with
    several shows whether they fit (the reference one has one profile)."""
    template = built_once(tmp_path_factory, "every_bundle.duckdb", every_bundle_database)
    with serve(template, tmp_path_factory.mktemp("e2e-every-bundle")) as server:
        yield server


@contextlib.contextmanager
def serve(
    db_template: Path, workdir: Path, env_extra: dict[str, str] | None = None
) -> Iterator[StreamlitServer]:
    """Run the dashboard on a copy of ``db_template`` in ``workdir``, with ``env_extra`` set."""
    db_path = workdir / "memplan.duckdb"
    shutil.copyfile(db_template, db_path)
    home = workdir / "home"
    home.mkdir()
    log_path = workdir / "streamlit.log"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"MEMPLAN_READ_ONLY", database.LOCK_TIMEOUT_ENV_VAR}
    }
    env |= {database.DB_ENV_VAR: str(db_path), "HOME": str(home), "PYTHONUNBUFFERED": "1"}
    env |= env_extra or {}
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP_PATH),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        # Usage statistics are off by .streamlit/config.toml, not by a flag here: the
        # browser would fetch data.streamlit.io, and test_offline checks the shipped setting.
        # Other work may edit the sources while the suite runs; never rerun on that.
        "--server.fileWatcherType",
        "none",
    ]
    with log_path.open("wb") as log:
        # Its own process group, so teardown also stops whatever the server started.
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = StreamlitServer(url, db_path, log_path, process)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not _healthy(url):
            if process.poll() is not None:
                raise RuntimeError(
                    f"streamlit exited with {process.returncode} before it was ready:\n"
                    f"{server.log()}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"streamlit was not healthy after {SERVER_START_TIMEOUT_S:g} s:\n{server.log()}"
                )
            time.sleep(HEALTH_POLL_S)
        yield server
    finally:
        stop_process_group(process, SERVER_STOP_TIMEOUT_S)
        # A launched sweep runs in a session of its own and outlives the server: stop it too.
        if launcher.status(db_path).running:
            launcher.cancel(db_path)


@pytest.fixture
def dashboard_url(dashboard_server: StreamlitServer) -> str:
    """The running dashboard's address, e.g. ``http://127.0.0.1:40123``."""
    return dashboard_server.url


@pytest.fixture
def every_bundle_url(every_bundle_server: StreamlitServer) -> str:
    """The address of the dashboard serving every bundled profile (`every_bundle_server`)."""
    return every_bundle_server.url


@pytest.fixture
def screenshots_dir() -> Path:
    """Where the suite saves its screenshots (``artifacts/screenshots``), created."""
    SCREENSHOTS_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS_DIR


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's chromium, headless, through Playwright's sync API."""
    executable = chromium_path()
    if executable is None:
        message = f"Debian's chromium is not installed; install it with `{CHROMIUM_INSTALL}`"
        if _in_ci():
            pytest.fail(f"CI must run the browser tests: {message} (.ci/run does)")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


# Run in a tab before it leaves a page: what a page stored in the browser goes with it
# (on about:blank, which may store nothing, the browser refuses: nothing to clear there).
CLEAR_STORAGE_JS = "() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }"


class SharedTab:
    """One chromium tab, lent to one test (or one test module's fixture) at a time and put
    back as new: on about:blank, storage and cookies cleared, at `VIEWPORT`, with the
    default timeout. Leaving the page ends its Streamlit session, as closing a context did.

    Why one tab: a new context's first page starts a renderer process, which parses and
    compiles Streamlit's bundle anew. Loading the Sizing page in a new context took 4.7 CPU s
    of chromium and 3.2 s; the same tab navigating to it again 2.3 CPU s and 1.7 s (Intel
    Xeon 2-core VM, 2026-11-29, four loads each). A borrower that adds listeners removes
    them (`tests.e2e.test_offline.requests_recorded`); a tab that cannot be put back (it
    crashed, or was closed) is replaced by a new one on the next loan.
    """

    def __init__(self, browser) -> None:
        self._browser = browser
        self._context = None
        self._tab = None
        self._lent = False

    @contextlib.contextmanager
    def lent(self) -> Iterator[object]:
        """The tab, for the ``with`` block; reset when it ends."""
        if self._lent:
            raise RuntimeError(
                "the shared tab is already lent: a test takes one of the tab fixtures "
                "(page, dell_page, sizing_slider_moved), not two"
            )
        if self._tab is None:
            self._context = self._browser.new_context(viewport=VIEWPORT)
            self._tab = self._context.new_page()
        self._tab.set_default_timeout(DEFAULT_TIMEOUT_MS)
        self._lent = True
        try:
            yield self._tab
        finally:
            self._lent = False
            self._put_back()

    def _put_back(self) -> None:
        try:
            self._tab.evaluate(CLEAR_STORAGE_JS)
            self._tab.goto("about:blank")
            self._context.clear_cookies()
            self._tab.set_viewport_size(VIEWPORT)
        except Exception:  # whatever broke it (a crash, a closed tab): the next loan gets a new one
            self.close()

    def close(self) -> None:
        if self._context is not None:
            with contextlib.suppress(Exception):
                self._context.close()
        self._context = self._tab = None


@pytest.fixture(scope="session")
def shared_tab(browser) -> Iterator[SharedTab]:
    """This worker's one tab (`SharedTab`), closed with the session."""
    tab = SharedTab(browser)
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture
def page(shared_tab: SharedTab, request: pytest.FixtureRequest) -> Iterator[object]:
    """The worker's tab (`SharedTab`), new to this test (its own Streamlit session) at
    1400x900; a failing test leaves a screenshot."""
    with shared_tab.lent() as tab:
        try:
            yield tab
        finally:
            report = getattr(request.node, "rep_call", None)
            if report is not None and report.failed:
                FAILURES_DIR.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(Exception):
                    path = FAILURES_DIR / f"{request.node.name}.png"
                    tab.screenshot(path=str(path), full_page=True)


@dataclass(frozen=True)
class SliderMove:
    """What one tab saw of the Sizing page (`sizing_slider_moved`): every address it asked
    for while the page loaded and while the slider's move was drawn (each with the tab's
    icon), the "Upper bound" before and after, and the exceptions shown after each."""

    load_urls: list[str]
    move_urls: list[str]
    bound_before: str
    bound_after: str
    exceptions_after_load: int
    exceptions_after_move: int


@pytest.fixture(scope="session")
def sizing_slider_moved(shared_tab: SharedTab, dashboard_server: StreamlitServer) -> SliderMove:
    """The Sizing page opened at the root and then through the sidebar's link, and its batch
    size slider pressed to the end (the largest batch offered), once for the session.

    `test_dashboard` reads the prediction it moved and `test_offline` the addresses asked
    on the way: one page load serves both, where each loaded it again (a load is seconds
    of chromium's CPU). The tab is put back before the tests read the record, so no open
    session idles on the server meanwhile.
    """
    from playwright.sync_api import expect

    from tests.e2e.test_dashboard import RENDER_TIMEOUT_MS, metric_value, open_page, wait_for_idle
    from tests.e2e.test_offline import favicon_url, requests_recorded

    with shared_tab.lent() as tab, requests_recorded(tab) as urls:
        exceptions = tab.get_by_test_id("stException")
        try:
            open_page(tab, dashboard_server.url, "Sizing", by_link=True)
            urls.append(favicon_url(tab))
            load_urls, exceptions_after_load = list(urls), exceptions.count()
            urls.clear()
            predicted = metric_value(tab, "Upper bound")
            expect(predicted).to_have_count(1)
            before = predicted.inner_text()
            slider = tab.get_by_test_id("stSlider").filter(has_text="Batch size")
            thumb = slider.get_by_role("slider")
            thumb.focus()
            thumb.press("End")  # surely another prediction, and charts drawn again
            expect(predicted).not_to_have_text(before, timeout=RENDER_TIMEOUT_MS)
            wait_for_idle(tab)
            urls.append(favicon_url(tab))
            after = predicted.inner_text()
            return SliderMove(
                load_urls, list(urls), before, after, exceptions_after_load, exceptions.count()
            )
        except Exception:
            FAILURES_DIR.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(Exception):
                path = FAILURES_DIR / "sizing_slider_moved.png"
                tab.screenshot(path=str(path), full_page=True)
            raise


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Keep each phase's report on the item, and show the server's log under a failure."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
    if report.failed:
        for server in getattr(item, "funcargs", {}).values():
            if isinstance(server, StreamlitServer):
                report.sections.append(("streamlit server log (tail)", server.log()))
