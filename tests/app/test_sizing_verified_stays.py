"""A verified answer stays on the Sizing page and reads VERIFIED (issue 26 finding 2).

Seen on 9c1906c: a database that imported the bundled runs answers from the
bundled models in memory (`modeling.stored.bundle`: while it holds exactly their
runs); at a 4 GiB budget, batch 3, the page answered 80^3, "Verify by measuring"
ran the answer and the next size up on this machine, and the page then said "No
fitted 3D U-Net (IntelAI/unet) models yet ... no predictions, bounds or sizing
answers": the two new runs changed the profile's runs, so the bundle no longer
applied. The runs here are what that sweep stores (the answer ok under the limit,
the next size up stopped at it), written as the sweep writes them.
"""

from __future__ import annotations

import uuid
from dataclasses import fields
from pathlib import Path

import pytest

from core import database, store, workloads
from core.records import RunRecord
from core.units import GIB
from modeling.decision import same_config
from profiling import exchange
from tests.app.helpers import open_page, shown

PAGE = "dashboard/sizing_page.py"
KNOBS = "259d139078"  # the AVX2 AMD knob profile, the bundled one of this 2-core machine
QUESTION = {
    "workload": "unet3d",
    "image": "64",
    "batch": "3",
    "budget": "4",
    "machine": KNOBS,
}
USABLE_BYTES = int(4 * GIB / 1.2)  # the page's default 20% headroom


@pytest.fixture
def imported_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``MEMPLAN_DB`` the dashboard started on, then every bundled run imported.

    The dashboard installs the bundled evaluations when it prepares a database, once
    per process; this one had no runs then, so its models are read from the bundle in
    memory (`modeling.stored.bundle`), as in the finding. (Created empty first, as the
    CLI creates one: a file that does not exist yet the dashboard seeds itself.)
    """
    path = tmp_path / "memplan.duckdb"
    database.ensure_database(path)
    monkeypatch.setenv(database.DB_ENV_VAR, str(path))
    started = open_page(PAGE, **QUESTION)
    assert [i for i in started.info if shown(i.value).startswith("No fitted")]
    for runs_file, samples_file in database.BUNDLED_EXPORTS:
        exchange.import_runs(path, runs_file, samples_file)
    return path


def measured(db: Path, config: workloads.WorkloadConfig, status: str, peak: int | None) -> None:
    """A run of ``config`` on the knob profile, as a verifying sweep stores it now."""
    runs = store.load_runs(db, store.RunFilter(workload="unet3d", machine=KNOBS))
    network = workloads.get("unet3d").Config
    # A run of the reference network, the page's default knobs: its facts are the profile's.
    row = next(
        dict(row)
        for row in runs.to_dict("records")
        if same_config(row, network(workloads.config_from_row(row).image_shape, row["batch_size"]))
    )
    depth, height, width = config.image_shape
    row.update(
        run_id=uuid.uuid4().hex,
        sweep_id=None,
        created_at=store.now_iso(),
        status=status,
        message="" if status == "ok" else "stopped at the memory limit",
        depth=depth,
        height=height,
        width=width,
        batch_size=config.batch_size,
        memory_limit_bytes=USABLE_BYTES,
        peak_hwm_bytes=peak,
        peak_sampled_bytes=peak,
    )
    names = {field.name for field in fields(RunRecord)} - {"samples"}
    values = {name: (None if _missing(row.get(name)) else row.get(name)) for name in names}
    store.insert_run(db, RunRecord(**values))


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def answers(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_after_the_verify_runs_the_answer_stays_and_reads_verified(imported_db: Path) -> None:
    at = open_page(PAGE, **QUESTION)
    before = answers(at)
    side = before["Largest cube at batch 3"]
    assert side.endswith("^3")
    answered = int(side.removesuffix("^3"))
    config = workloads.get("unet3d").Config
    next_side = answered + 16
    # What the two-point sweep stores: the answer fitted, the next size up stopped.
    measured(imported_db, config((answered,) * 3, 3), "ok", int(0.9 * USABLE_BYTES))
    measured(imported_db, config((next_side,) * 3, 3), "oom", None)

    at.run()

    assert not at.exception
    infos = [shown(info.value) for info in at.info]
    assert not [info for info in infos if info.startswith("No fitted")]
    assert answers(at) == before
    verified = [shown(box.value) for box in at.success]
    assert any(
        text.startswith(f"Verified: {answered}x{answered}x{answered} at batch 3 fits at ")
        and f"{next_side}x{next_side}x{next_side} stopped at the" in text
        for text in verified
    ), verified
