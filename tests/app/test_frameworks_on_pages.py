"""Answers and runs per framework (issue 29 point 3): the pages' Framework selector, the
sidebar launcher's framework, and the commands that refuse to answer across frameworks.

The database is every bundled TensorFlow run and evaluation plus synthetic PyTorch U-Net
runs with their own evaluation (`tests.app.torch_runs`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from application import sweep_job
from core import frameworks
from core.frameworks import INSTALL_HINTS, TENSORFLOW, TORCH
from memplan import cli as memplan_cli
from tests.app.helpers import APP, open_page, shown, this_machine_is, widget
from tests.app.torch_runs import TORCH_BATCHES, TORCH_SIDES, torch_key
from tests.conftest import UNMEASURED_MACHINE

TORCH_RUNS = len(TORCH_SIDES) * len(TORCH_BATCHES)
TORCH_PROFILE = torch_key()


@pytest.fixture(autouse=True)
def here_no_run_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    this_machine_is(monkeypatch, UNMEASURED_MACHINE)


def framework_box(at: AppTest):
    return widget(at.main.selectbox, "Framework")


# --- the pages ---------------------------------------------------------------------------


def test_the_sweeps_page_shows_one_frameworks_runs_and_keeps_the_choice_in_the_url(
    unmeasured_torch_db: Path,
) -> None:
    at = open_page("dashboard/sweeps_page.py")
    box = framework_box(at)
    assert box.options == ["TensorFlow", "PyTorch"] and box.value == TENSORFLOW
    assert not any(f"{TORCH_RUNS} of {TORCH_RUNS} runs" in shown(c.value) for c in at.caption)

    at = box.set_value(TORCH).run()
    assert at.query_params["framework"] == TORCH
    assert any(shown(c.value).startswith(f"{TORCH_RUNS} of {TORCH_RUNS} runs") for c in at.caption)

    linked = open_page("dashboard/sweeps_page.py", framework=TORCH)
    assert framework_box(linked).value == TORCH


def test_the_models_page_offers_only_the_chosen_frameworks_profiles(
    unmeasured_torch_db: Path,
) -> None:
    at = open_page("dashboard/models_page.py", workload="unet3d", framework=TORCH)
    machine = widget(at.main.selectbox, "Machine")
    assert machine.value == TORCH_PROFILE
    # Options as shown, by name: "Intel Test, AVX-512, 8 cores, PyTorch 2.13", ...
    assert all("PyTorch" in label for label in machine.options), machine.options

    at = framework_box(at).set_value(TENSORFLOW).run()
    machine = widget(at.main.selectbox, "Machine")
    assert not [label for label in machine.options if TORCH_PROFILE in label]
    assert all("TensorFlow" in label for label in machine.options), machine.options
    assert at.query_params["framework"] == TENSORFLOW


def test_switching_the_framework_on_the_sizing_page_leaves_the_links_machine_behind(
    unmeasured_torch_db: Path,
) -> None:
    at = open_page("dashboard/sizing_page.py", workload="unet3d", machine="9b59349f74")
    assert widget(at.main.selectbox, "Machine").value == "9b59349f74"
    at = framework_box(at).set_value(TORCH).run()
    assert not at.exception
    # The torch default: this machine (its option), which the torch profile answers for.
    machine = widget(at.main.selectbox, "Machine")
    assert machine.format_func(machine.value).endswith("— this machine")
    assert any(TORCH_PROFILE in caption.value for caption in at.caption)
    # The TensorFlow profile of the link is not a torch one: dropped without a complaint.
    assert not [w for w in at.warning if "machine=" in shown(w.value)]


def test_a_link_to_a_framework_without_runs_falls_back_to_tensorflow_and_says_so(
    unmeasured_torch_db: Path,
) -> None:
    at = open_page("dashboard/sizing_page.py", workload="unet3d", framework="jax")
    assert framework_box(at).value == TENSORFLOW
    said = [shown(w.value) for w in at.warning]
    assert any("The link's framework='jax' was ignored" in s for s in said), said


# --- the sidebar launcher ----------------------------------------------------------------


def launch_torch(monkeypatch: pytest.MonkeyPatch) -> tuple[AppTest, list]:
    launched: list = []
    monkeypatch.setattr(
        sweep_job,
        "launch",
        lambda db, request, refit=None, **options: launched.append((request, refit)),
    )
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.sidebar.selectbox(key="launch_framework").set_value(TORCH)
    at.sidebar.text_input(key="launch_image_sizes").set_value("32")
    labels = [button.label for button in at.sidebar.button]
    return at.sidebar.button[labels.index("Launch sweep")].click().run(), launched


def test_the_launcher_sweeps_and_refits_torch_when_asked(
    unmeasured_reference_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frameworks, "version", lambda framework: "2.13.0+cpu")
    at, launched = launch_torch(monkeypatch)
    assert not at.exception and not at.sidebar.error
    [(request, refit)] = launched
    assert request.framework == TORCH
    assert (refit.framework, refit.quick) == (TORCH, False)  # the full evaluation's settings


def test_launching_torch_without_torch_says_how_to_install_it(
    unmeasured_reference_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frameworks, "version", lambda framework: frameworks.NOT_INSTALLED)
    at, launched = launch_torch(monkeypatch)
    assert not launched
    [error] = at.sidebar.error
    assert INSTALL_HINTS[TORCH] in shown(error.value)


# --- the commands ------------------------------------------------------------------------


def size_buy(db: Path, *flags: str) -> list[str]:
    return ["size", "buy", "--image-size", "128", "--batch-size", "2", "--db", str(db), *flags]


def test_a_torch_profile_asked_without_framework_torch_is_refused_naming_the_flag(
    unmeasured_torch_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert memplan_cli.main(size_buy(unmeasured_torch_db, "--machine", TORCH_PROFILE)) == 2
    error = capsys.readouterr().err
    assert f"machine profile {TORCH_PROFILE}" in error
    assert "is a PyTorch profile, and TensorFlow was asked for: add --framework torch" in error


def test_a_framework_without_models_is_an_error_never_another_frameworks_answer(
    unmeasured_torch_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = size_buy(unmeasured_torch_db, "--framework", TORCH, "--workload", "alexnet")
    argv[argv.index("128")] = "224"
    assert memplan_cli.main(argv) == 2
    error = capsys.readouterr().err
    assert "no fitted PyTorch models of alexnet" in error
    assert "an answer is never taken from another framework's runs" in error
    assert "memplan evaluate --workload alexnet --framework torch" in error


def test_evaluate_refuses_a_profile_of_another_framework(
    unmeasured_torch_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", "--db", str(unmeasured_torch_db), "--machine", TORCH_PROFILE, "--no-store"]
    assert memplan_cli.main(argv) == 2
    assert "add --framework torch" in capsys.readouterr().err


def test_a_workload_without_torch_runs_gets_the_torch_sweep_that_gives_it_models(
    unmeasured_torch_db: Path,
) -> None:
    at = open_page("dashboard/sizing_page.py", workload="alexnet", framework=TORCH)
    assert framework_box(at).value == TORCH
    commands = [str(block.value) for block in at.code]
    assert any(
        c.startswith("memplan sweep --workload alexnet --framework torch ") for c in commands
    )
    # Nothing answered from the TensorFlow AlexNet models.
    assert not [m for m in at.metric if m.label.startswith("Memory to buy")]
