"""A sweep launched from the sidebar onto a real Slurm partition, in a real browser.

The dashboard runs with ``SLURM_CONF`` pointing at the tests' one-node cluster
(tests/slurm_cluster.py). A 2-point sweep (on PyTorch, chosen in the form) shows each
point queued, running and done with its Slurm job id and lands in the database with its
job ids; a second one is cancelled from the sidebar, and Slurm then reports its jobs
CANCELLED.
Screenshots: ``sidebar_slurm_running_{1024,1400}.png``, ``sidebar_slurm_finished.png``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from core import store
from tests.e2e.conftest import StreamlitServer, serve
from tests.e2e.test_dashboard import (
    RENDER_TIMEOUT_MS,
    SIDEBAR_WIDTHS,
    SWEEP_TIMEOUT_MS,
    VIEWPORT_HEIGHT,
    choose,
    no_exception,
    open_page,
    sidebar_widget,
    type_value,
    wait_for_idle,
)

pytestmark = pytest.mark.e2e

# Two tiny points (16^3, 4 base filters, 2 steps) on PyTorch: the claims are the sidebar's and
# Slurm's, and torch's child costs about half a TensorFlow one's CPU (its import). The second
# sweep, a bigger image on TensorFlow (the default), is cancelled long before it could end.
FINISHED_SWEEP = {"Image sizes": "16", "Batch sizes": "1 2", "Base filters": "4"}
FINISHED_FRAMEWORK = "PyTorch"
CANCELLED_SWEEP = {"Image sizes": "32", "Batch sizes": "1 2", "Base filters": "4"}
PROGRESS = re.compile(r"(\d+ to submit · )?\d+ queued · \d+ running · \d+ done of 2")
# How long Slurm may take to end a cancelled job's processes.
JOBS_END_S = 60.0
JOB_ID = re.compile(r"^\d+(_\d+)?$")


@pytest.fixture(scope="module")
def slurm_server(
    slurm_cluster, e2e_db_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StreamlitServer]:
    """The dashboard, able to reach the test cluster (its sweeps inherit ``SLURM_CONF``)."""
    workdir = tmp_path_factory.mktemp("e2e-slurm")
    with serve(e2e_db_template, workdir, {"SLURM_CONF": str(slurm_cluster.conf_path)}) as server:
        yield server


def _launch_on_slurm(page: Page, values: dict[str, str], framework: str | None = None) -> None:
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Slurm partition", exact=True).click()
    wait_for_idle(page)
    type_value(page, sidebar_widget(page, "stTextInput", "Partition").locator("input"), "debug")
    type_value(page, sidebar_widget(page, "stNumberInput", "CPUs per job").locator("input"), "1")
    for label, value in values.items():
        field = sidebar_widget(page, "stTextInput", label).locator("input")
        type_value(page, field, value, in_form=True)
    steps = sidebar_widget(page, "stNumberInput", "Steps").locator("input")
    type_value(page, steps, "2", in_form=True)
    if framework is not None:
        box = sidebar.get_by_role("combobox", name="Framework")
        choose(page, box, framework, re.compile(rf"^{re.escape(framework)}$"))
    refit = sidebar.get_by_role("combobox", name="Refit models afterwards")
    choose(page, refit, "no", re.compile(r"^no$", re.IGNORECASE))
    sidebar.get_by_role("button", name="Launch sweep").click()


def test_a_sweep_launched_onto_slurm_shows_each_point_and_lands_with_its_job_ids(
    page: Page, slurm_server: StreamlitServer, slurm_cluster, screenshots_dir: Path
) -> None:
    open_page(page, slurm_server.url, "Sweeps")
    before = set(store.load_runs(slurm_server.db_path)["run_id"])
    _launch_on_slurm(page, FINISHED_SWEEP, FINISHED_FRAMEWORK)

    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text(PROGRESS)).to_be_visible(timeout=RENDER_TIMEOUT_MS)
    expect(sidebar.get_by_text("On Slurm partition debug", exact=False)).to_be_visible()
    points = sidebar.get_by_test_id("stDataFrame")
    expect(points).to_be_visible(timeout=RENDER_TIMEOUT_MS)
    for width in SIDEBAR_WIDTHS:
        page.set_viewport_size({"width": width, "height": VIEWPORT_HEIGHT})
        cancel = sidebar.get_by_role("button", name="Cancel sweep")
        cancel.scroll_into_view_if_needed()
        expect(cancel).to_be_in_viewport(ratio=1)
        sidebar.screenshot(path=str(screenshots_dir / f"sidebar_slurm_running_{width}.png"))

    outcome = sidebar.get_by_text(
        re.compile(r"(Done: the last sweep finished|Last sweep (was cancelled|failed|crashed))")
    )
    expect(outcome).to_be_visible(timeout=SWEEP_TIMEOUT_MS)
    assert outcome.inner_text().startswith("Done: the last sweep finished, 2 / 2 points"), (
        outcome.inner_text() + slurm_server.log()
    )
    wait_for_idle(page)
    no_exception(page)
    sidebar.screenshot(path=str(screenshots_dir / "sidebar_slurm_finished.png"))

    runs = store.load_runs(slurm_server.db_path)
    new = runs[~runs["run_id"].isin(before)]
    assert sorted(new["batch_size"]) == [1, 2]
    assert set(new["status"]) == {"ok"}, new["message"].tolist()
    assert all(JOB_ID.match(job) for job in new["slurm_job_id"])
    assert set(new["slurm_cpus_per_task"]) == {1}
    assert set(new["framework"]) == {"torch"}


def test_cancel_in_the_sidebar_cancels_the_slurm_jobs(
    page: Page, slurm_server: StreamlitServer, slurm_cluster
) -> None:
    open_page(page, slurm_server.url, "Sweeps")
    before = set(store.load_runs(slurm_server.db_path)["run_id"])
    _launch_on_slurm(page, CANCELLED_SWEEP)

    sidebar = page.get_by_test_id("stSidebar")
    # Both points submitted: each has its job id in the points table.
    expect(sidebar.get_by_text(PROGRESS)).to_be_visible(timeout=RENDER_TIMEOUT_MS)
    expect(sidebar.get_by_text(re.compile(r"^0 queued · 0 running|to submit"))).to_have_count(
        0, timeout=RENDER_TIMEOUT_MS
    )
    sidebar.get_by_role("button", name="Cancel sweep").click()
    expect(sidebar.get_by_text(re.compile(r"Last sweep was cancelled"))).to_be_visible(
        timeout=SWEEP_TIMEOUT_MS
    )
    no_exception(page)

    runs = store.load_runs(slurm_server.db_path)
    cancelled = runs[~runs["run_id"].isin(before)]
    assert set(cancelled["status"]) == {"interrupted"}, cancelled["message"].tolist()
    assert len(cancelled) == 2
    # Slurm says CANCELLED once the job's processes are gone (COMPLETING until then).
    deadline = time.monotonic() + JOBS_END_S
    while True:
        listed = slurm_cluster.command(
            "squeue", "-h", "--array", "--states=all", "-o", "%i %T"
        ).stdout
        states = dict(line.split() for line in listed.splitlines() if line.strip())
        ended = [
            states.get(job) or states.get(job.split("_")[0]) for job in cancelled["slurm_job_id"]
        ]
        if ended == ["CANCELLED"] * 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert ended == ["CANCELLED"] * 2, listed
