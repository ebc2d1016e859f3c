"""One rule for which machine an answer is for, and for a new database, on every path
(issue 42 point 2).

Each bundled profile asked for by name, on the Sizing page (a link's ``machine``), on
the command line (``memplan size ... --machine KEY --json``) and in the report
(``memplan report --machine KEY``): one answer, for that profile's own machine, never
widened for another. On a machine without models the page's default is this machine,
answered by another profile widened, and the command the page offers to copy names this
machine, so the command line answers it the same to the digit. On 89ca53e a link
naming the Intel reference (``machine=9b59349f74``) on such a machine answered
177.60 GiB (widened x1.081 for this machine) where ``memplan size buy --machine
9b59349f74`` answered 164.23 GiB.

A new database starts from the bundled runs on every path; one that exists without
runs gets an error naming the one command that loads them.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from core import database
from core.frameworks import TENSORFLOW, TORCH
from memplan import cli as memplan_cli
from tests.app.helpers import open_page, shown, this_machine_is, widget
from tests.app.test_one_answer_paths import (
    BATCH,
    BUDGET_GIB,
    FIGURES,
    IMAGE,
    PAGE,
    cli_figures,
    page_figures,
    report_figures,
)
from tests.conftest import UNMEASURED_MACHINE

INTEL = "9b59349f74"
# Every bundled U-Net profile with models, and its framework.
BUNDLED = [
    (INTEL, TENSORFLOW),
    ("b42ae893fe", TENSORFLOW),
    ("259d139078", TENSORFLOW),
    ("cac47eeb1b", TENSORFLOW),
    ("71fc998d9b", TORCH),
]
COMMAND = re.compile(r"`(memplan size (?:image|batch) [^`]+)`")


@pytest.fixture(autouse=True)
def here_no_run_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine is one no bundled run measured, whatever CPU runs the test."""
    this_machine_is(monkeypatch, UNMEASURED_MACHINE)


def copied_commands(at: Any) -> list[list[str]]:
    """The ``memplan size image|batch ... --verify`` commands the page offers to copy."""
    texts = [shown(element.value) for element in at.caption]
    return [shlex.split(found) for text in texts for found in COMMAND.findall(text)]


def run_copied(words: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The copied command as typed, but answering as JSON rather than measuring."""
    assert words[:2] == ["memplan", "size"] and words[-1] == "--verify"
    capsys.readouterr()
    assert memplan_cli.main([*words[1:-1], "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def check_copied(at: Any, on_page: dict[str, Any], capsys: pytest.CaptureFixture) -> int:
    """Each command the page offers answers its figure to the digit; how many there were."""
    commands = copied_commands(at)
    for words in commands:
        said = run_copied(words, capsys)
        key = "side" if words[2] == "image" else "batch_size"
        assert said["answer"][key] == on_page[key], words
    return len(commands)


@pytest.mark.parametrize(("profile", "framework"), BUNDLED)
def test_each_bundled_profile_gets_one_answer_for_its_own_machine_on_every_path(
    unmeasured_every_bundle_db: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    profile: str,
    framework: str,
) -> None:
    link = {"image": str(IMAGE), "batch": str(BATCH), "budget": str(BUDGET_GIB)}
    link |= {"machine": profile, "framework": framework}
    at = open_page(PAGE, workload="unet3d", **link)
    assert widget(at.selectbox, "Machine").value == profile
    on_page = page_figures(at)
    on_cli = cli_figures(unmeasured_every_bundle_db, profile, 20, None, capsys, framework)
    in_report = report_figures(
        unmeasured_every_bundle_db, profile, 20, None, tmp_path / "r.html", framework
    )

    assert {key: on_page[key] for key in FIGURES} == {key: on_cli[key] for key in FIGURES}
    figures = ("memory_gb", "side", "batch_size", "bounds")
    assert {key: in_report[key] for key in figures} == {key: on_cli[key] for key in figures}
    # A profile named answers for its own machine: nothing widened for another.
    assert on_page["transfer"] is None and on_cli["transfer"] is None
    assert in_report["transfer"] is None
    check_copied(at, on_page, capsys)
    # Each says the profile's cores and what is known of more (issue 42 point 5).
    said = [shown(c.value) for c in at.caption if "Measured on 2 cores; on one machine" in c.value]
    assert len(said) == 1 and "(data/cores/" in said[0]
    assert '<p id="cores">Measured on 2 cores; on one machine' in (tmp_path / "r.html").read_text()


def test_the_default_for_a_machine_without_models_is_this_machine_on_every_path(
    unmeasured_every_bundle_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = {"image": str(IMAGE), "batch": str(BATCH), "budget": str(BUDGET_GIB)}
    at = open_page(PAGE, workload="unet3d", **link)
    machine = widget(at.selectbox, "Machine")
    assert machine.value == UNMEASURED_MACHINE.key
    assert machine.format_func(machine.value).endswith("— this machine")
    on_page = page_figures(at)
    # This machine named on the command line is its default: the Intel reference, widened.
    here = cli_figures(unmeasured_every_bundle_db, UNMEASURED_MACHINE.key, 20, None, capsys)
    assert here["transfer"]["answered_by"] == INTEL
    assert {key: on_page[key] for key in FIGURES} == {key: here[key] for key in FIGURES}
    report = report_figures(
        unmeasured_every_bundle_db,
        UNMEASURED_MACHINE.key,
        20,
        None,
        tmp_path / "r.html",
        TENSORFLOW,
    )
    assert report["bounds"] == here["bounds"]
    # The commands the page offers name this machine, and answer as the page did.
    assert check_copied(at, on_page, capsys) >= 1
    for words in copied_commands(at):
        assert words[words.index("--machine") + 1] == UNMEASURED_MACHINE.key

    # The Intel reference by name, in a link or on the command line: its own machine's answer,
    # not widened, so lower than this machine's.
    intel = open_page(PAGE, workload="unet3d", machine=INTEL, **link)
    named, asked = (
        page_figures(intel),
        cli_figures(unmeasured_every_bundle_db, INTEL, 20, None, capsys),
    )
    assert {key: named[key] for key in FIGURES} == {key: asked[key] for key in FIGURES}
    assert asked["transfer"] is None and named["transfer"] is None
    assert named["bounds"] != on_page["bounds"]


def _size_buy(db: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str]:
    capsys.readouterr()
    code = memplan_cli.main(
        ["size", "buy", "--image-size", "128", "--batch-size", "2", "--db", str(db), *more]
    )
    out, err = capsys.readouterr()
    return code, out + err


def test_a_new_database_is_seeded_on_the_command_line_as_on_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    new = tmp_path / "new.duckdb"
    code, said = _size_buy(new, capsys, "--machine", "9b59", "--json")
    assert code == 0, said
    on_cli = json.loads(said)
    assert on_cli["machine"]["profile"] == INTEL and new.exists()

    # The dashboard on another new database: seeded the same, the same answer.
    page_db = tmp_path / "page.duckdb"
    monkeypatch.setenv(database.DB_ENV_VAR, str(page_db))
    at = open_page(PAGE, workload="unet3d", machine="9b59", image="128", batch="2")
    assert page_figures(at)["memory_gb"] == on_cli["answer"]["memory_gb"]


def test_an_existing_database_without_runs_names_the_command_that_loads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = database.ensure_database(tmp_path / "empty.duckdb")
    code, said = _size_buy(empty, capsys, "--machine", "9b59")
    assert code != 0
    assert f"holds no unet3d runs: `memplan import --bundled --db {empty}`" in said
    assert "the known profiles are: none" not in said

    capsys.readouterr()
    assert memplan_cli.main(["import", "--bundled", "--db", str(empty)]) == 0
    assert "bundled run(s) into" in capsys.readouterr().out
    code, said = _size_buy(empty, capsys, "--machine", "9b59", "--json")
    assert code == 0 and json.loads(said)["machine"]["profile"] == INTEL
