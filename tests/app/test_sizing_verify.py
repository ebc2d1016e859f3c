"""The Sizing page's verified answers: the largest image and batch say whether a run measured
them, and a "Verify by measuring" button launches the sweep that does, where it can."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from application import sweep_job, verify_here
from core import profiles, store
from core.units import GIB
from dashboard import data, machine_panel
from tests.app.conftest import shared_copy
from tests.app.helpers import alexnet_record, open_page, shown, widget
from tests.conftest import build_record

PAGE = "dashboard/sizing_page.py"
# The AlexNet runs are build_record's machine ("Intel Test"); at a 16 GiB budget, 20%
# headroom, the least-squares model answers 866^2 at batch 32, and batch 1227 at 224^2.
LINK = {
    "workload": "alexnet",
    "image": "224",
    "batch": "32",
    "budget": "16",
    "model": "least_squares",
}
USABLE_BYTES = int(16 * GIB / 1.2)
TEST_MACHINE = profiles.profile_of(build_record().row())
VERIFY = "Verify by measuring"


@pytest.fixture
def here_is_the_test_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine is the AlexNet runs' one, whatever CPU runs the test."""
    monkeypatch.setattr(
        machine_panel,
        "this_profile",
        lambda precision="float32", framework="tensorflow": TEST_MACHINE,
    )


@pytest.fixture(scope="module")
def _copies_here() -> dict[Path, Path]:
    return {}


@pytest.fixture
def alexnet_here(
    alexnet_template: Path,
    here_is_the_test_machine: None,
    _copies_here: dict[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """The AlexNet runs and models, this machine being theirs: one copy per process for the
    tests that only read it as that machine, so each after the first finds the page's caches
    warm (a test that wrote to it fails)."""
    yield from shared_copy(alexnet_template, _copies_here, tmp_path_factory, monkeypatch)


def can_give(monkeypatch: pytest.MonkeyPatch, limit_bytes: int) -> None:
    """This machine can safely give a run ``limit_bytes`` (`verify_here.safe_limit_bytes`)."""
    monkeypatch.setattr(verify_here, "safe_limit_bytes", lambda: limit_bytes)


def verify_buttons(at: AppTest) -> list:
    return [button for button in at.button if button.label == VERIFY]


def captions(at: AppTest) -> list[str]:
    return [shown(caption.value) for caption in at.caption]


def test_a_budget_above_what_this_machine_can_give_disables_the_buttons_and_says_why(
    alexnet_here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    can_give(monkeypatch, 4 * GIB)
    at = open_page(PAGE, **LINK)

    image, batch = verify_buttons(at)
    assert image.disabled and batch.disabled
    refusals = [c for c in captions(at) if c.startswith("Cannot verify here: ")]
    assert len(refusals) == 2
    assert refusals[0].startswith(
        "Cannot verify here: the 13.3 GiB budget is more than this machine can safely give a "
        "run now (4 GiB: at most 75% of its RAM, keeping 2 GiB free for the host)"
    )
    assert "--executor slurm --partition P --mem 14GiB" in refusals[0]
    predictions = [c for c in captions(at) if c.startswith("A prediction, not verified by a run")]
    assert len(predictions) == 2
    assert "`memplan size image --workload alexnet --batch-size 32 " in predictions[0]


def test_another_machines_answer_cannot_be_verified_here(shared_alexnet_db: Path) -> None:
    # Unpatched, this machine is whatever CPU runs the test, not the AlexNet runs' "Intel Test".
    at = open_page(PAGE, **LINK)

    assert all(button.disabled for button in verify_buttons(at))
    refusal = next(c for c in captions(at) if c.startswith("Cannot verify here: "))
    assert refusal.startswith(
        f"Cannot verify here: this answer is for {TEST_MACHINE.label} "
        f"(profile {TEST_MACHINE.key}), not this machine"
    )


def test_a_read_only_dashboard_measures_nothing(
    alexnet_db: Path, here_is_the_test_machine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    can_give(monkeypatch, 64 * GIB)
    monkeypatch.setenv(data.READ_ONLY_ENV_VAR, "1")
    at = open_page(PAGE, **LINK)

    assert all(button.disabled for button in verify_buttons(at))
    assert any(c.startswith("This dashboard is read-only (MEMPLAN_READ_ONLY") for c in captions(at))


def test_verify_launches_the_answer_and_the_next_size_up_under_the_budget(
    alexnet_here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    can_give(monkeypatch, 64 * GIB)
    launched = []
    monkeypatch.setattr(sweep_job, "launch", lambda db, request: launched.append((db, request)))
    at = open_page(PAGE, **LINK)
    image, batch = verify_buttons(at)
    assert not image.disabled and not batch.disabled
    assert not [c for c in captions(at) if c.startswith("Cannot verify here")]

    image.click().run()

    [(db, request)] = launched
    assert db == alexnet_here
    assert (request.points, request.memory_limit_bytes) == (2, USABLE_BYTES)
    assert request.grid.image_sizes == ((866, 866), (867, 867))
    assert request.grid.batch_sizes == (32,)


def test_a_stored_run_of_the_answer_makes_it_verified(
    alexnet_db: Path, here_is_the_test_machine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    can_give(monkeypatch, 64 * GIB)
    at = open_page(PAGE, **LINK)
    assert widget(at.metric, "Largest square at batch 32").value == "866^2"
    limit = {"memory_limit_bytes": USABLE_BYTES}
    peaks = {"peak_hwm_bytes": int(12.1 * GIB), "peak_sampled_bytes": int(12.1 * GIB)}
    store.insert_run(alexnet_db, alexnet_record(866, 866, 32, **peaks, **limit))
    store.insert_run(
        alexnet_db,
        alexnet_record(867, 867, 32, status="oom", peak_hwm_bytes=None, timeline=0, **limit),
    )

    at = open_page(PAGE, **LINK)

    (verified,) = [shown(box.value) for box in at.success if shown(box.value).startswith("Verif")]
    assert verified == (
        "Verified: 866x866 at batch 32 fits at 12.1 GiB (measured); 867x867 stopped at the "
        "13.3 GiB limit."
    )
    image, batch = verify_buttons(at)
    assert image.disabled and not batch.disabled
    assert "Already measured (above): a sweep resumes past a point it has measured." in (
        captions(at)
    )
