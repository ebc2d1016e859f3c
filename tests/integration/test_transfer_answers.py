"""A machine with no fitted profile of its own: `memplan size buy` answers from another
profile, says which, that it is another machine and why, and widens the bound by the
spread between other profiles (`modeling.transfer`; issue 28, point 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memplan import cli
from modeling import machines
from tests.conftest import UNMEASURED_MACHINE as ELSEWHERE

BUY = ["size", "buy", "--image-size", "96", "--batch-size", "1", "--json"]


@pytest.fixture
def db(every_bundled_run: Path) -> Path:
    return every_bundled_run


def _asked(db: Path, capsys, *more: str) -> dict:
    assert cli.main([*BUY, "--db", str(db), *more]) == 0
    return json.loads(capsys.readouterr().out)


def test_another_machine_answers_says_so_and_widens_the_bound(
    db: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(
        machines, "this_profile", lambda precision="float32", framework="tensorflow": ELSEWHERE
    )

    moved = _asked(db, capsys)
    transfer = moved["machine"]["transfer"]
    # The same profile asked for by name answers for itself: nothing widened.
    own = _asked(db, capsys, "--machine", moved["machine"]["profile"])

    assert own["machine"]["transfer"] is None
    assert transfer["answered_by"] == moved["machine"]["profile"]
    assert transfer["evidence"].startswith("answered by another machine: profile ")
    assert (
        "the bundled reference, for this machine (Intel Xeon Platinum 8480+"
        in (transfer["evidence"])
    )
    assert "bound widened x" in transfer["evidence"] and transfer["reasons"]
    assert transfer["widening_factor"] >= 1
    assert moved["answer"]["bound_bytes"] >= own["answer"]["bound_bytes"]
    assert moved["answer"]["bound_bytes"] == pytest.approx(
        own["answer"]["bound_bytes"] * transfer["widening_factor"], rel=1e-6
    )
    assert "widened x1.06 for another machine" in moved["answer"]["basis"]["bound"]


def test_the_printed_answer_names_the_machine_that_answered(db: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(
        machines, "this_profile", lambda precision="float32", framework="tensorflow": ELSEWHERE
    )

    assert cli.main([*BUY[:-1], "--db", str(db)]) == 0

    out = capsys.readouterr().out
    assert "answered by another machine: profile 9b59349f74" in out
    assert "which has no models; against it: oneDNN on in both" in out
    assert "for another machine" in out  # the bound's words: widened x… for another machine
    # Another machine's runs are not this machine's measured range: the verdict says so.
    assert "beyond the measured runs: the runs are another machine's: profile 9b59349f74 (" in out
    assert "inside the measured range" not in out
