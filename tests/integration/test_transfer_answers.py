"""A machine with no fitted profile of its own: `memplan size buy` answers from another
profile, says which, that it is another machine and why, and widens the bound by the
spread between other profiles (`modeling.transfer`; issue 28, point 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import transfer as benchmark
from core import database
from core.database import DATA_DIR
from memplan import cli
from modeling import machines
from profiling import exchange
from tests.conftest import ONEDNN_OFF_MACHINE as ONEDNN_OFF
from tests.conftest import UNMEASURED_MACHINE as ELSEWHERE
from tests.conftest import built_once

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
    # x1.082 since the family 26 EPYC's oneDNN-off runs pair with the oneDNN-off AVX2
    # EPYC's across the instruction set alone (docs/transfer.md).
    assert "widened x1.08 for another machine" in moved["answer"]["basis"]["bound"]


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


def _this_machine_is(monkeypatch, profile) -> None:
    monkeypatch.setattr(
        machines, "this_profile", lambda precision="float32", framework="tensorflow": profile
    )


def test_facts_the_pairs_span_apart_widen_by_each_facts_own_spread(
    db: Path, monkeypatch, capsys
) -> None:
    # The bundled reference differs from this machine in oneDNN and the instruction set; no
    # bundled pair differs in both. Two oneDNN-off profiles are bundled, each the other's
    # nearest, so no profile's nearest differs in oneDNN: the evidence for it is each profile
    # paired across oneDNN alone, the AVX2 EPYC's and the family 26 EPYC's on and off
    # (`modeling.transfer.pairs_across`; peaks 1.01-2.50x and 0.96-3.36x).
    _this_machine_is(monkeypatch, ONEDNN_OFF)

    moved = _asked(db, capsys)
    transfer = moved["machine"]["transfer"]
    own = _asked(db, capsys, "--machine", moved["machine"]["profile"])

    assert transfer["answered_by"] == "9b59349f74"
    assert "oneDNN on, not off" in transfer["reasons"]
    assert (
        "no measured pair of other profiles differs as these two do (oneDNN and instruction "
        "set), so each fact's own widening multiplies: oneDNN x2.265"
    ) in transfer["evidence"]
    assert (
        "(pairs that differ in it: 259d139078 over cac47eeb1b, 4103ba2c8a over dcd4579e87, "
        "b42ae893fe over dcd4579e87, cac47eeb1b over 259d139078, dcd4579e87 over 4103ba2c8a)"
    ) in transfer["evidence"]
    assert transfer["widening_factor"] == pytest.approx(2.450, abs=5e-4)
    assert moved["answer"]["bound_bytes"] == pytest.approx(
        own["answer"]["bound_bytes"] * transfer["widening_factor"], rel=1e-6
    )


@pytest.fixture(scope="module")
def intel_and_amd512(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled Intel reference and AVX-512 EPYC runs, both oneDNN on, with their bundles:
    imported once for the session (`built_once`), the module's own copy."""

    def build(path: Path) -> None:
        database.ensure_database(path)
        for name in ("reference", "unet3d_amd"):
            exchange.import_runs(
                path, DATA_DIR / f"{name}_runs.parquet", DATA_DIR / f"{name}_samples.parquet"
            )

    template = built_once(tmp_path_factory, "intel_and_amd512.duckdb", build)
    return Path(shutil.copy(template, tmp_path_factory.mktemp("two-profiles") / "memplan.duckdb"))


@pytest.mark.parametrize(
    "question",
    [BUY[:-1], ["report", "--image-size", "96", "--batch-size", "1", "--budget", "64GiB"]],
    ids=["size", "report"],
)
def test_a_fact_no_measured_pair_spans_gives_no_answer_and_says_what_to_run(
    intel_and_amd512: Path, tmp_path: Path, monkeypatch, capsys, question: list[str]
) -> None:
    _this_machine_is(monkeypatch, ONEDNN_OFF)
    output = ["--output", str(tmp_path / "r.html")] if question[0] == "report" else []

    assert cli.main([*question, "--db", str(intel_and_amd512), *output]) == 2

    out, err = capsys.readouterr()
    assert out == "" and not (tmp_path / "r.html").exists()
    assert err.startswith(
        f"error: no bound can be given for this machine ({ONEDNN_OFF.label}, profile "
        f"{ONEDNN_OFF.key}), which has no models: the profile that would answer, 9b59349f74 ("
    )
    assert "differs from it (oneDNN on, not off), and no measured pair of other profiles " in err
    pairs = "(the measured pairs: b42ae893fe over 9b59349f74, 9b59349f74 over b42ae893fe)"
    assert f"no measured pair of other profiles differs in oneDNN {pairs}, so " in err
    assert "`memplan calibrate` measures it and fits its models" in err
    assert "`memplan calibrate --workload unet3d` measures them and fits its models." in err


def test_the_benchmark_answers_as_memplan_size_without_the_held_out_profiles_figures(
    db: Path,
) -> None:
    bundled = benchmark.Bundled.read(db)

    avx2 = benchmark.answer_for(bundled, "cac47eeb1b")
    onednn_off = benchmark.held_out_row(bundled, "259d139078")

    assert avx2.choice.key == "9b59349f74" and avx2.choice.reason == machines.BUNDLED
    knob_evidence = avx2.answering.training_range.knob_evidence
    assert {h.profile for h in knob_evidence.held_out} == {"259d139078"}  # not its own
    assert avx2.answering.training_range.machine_widening == avx2.choice.transfer.factor
    # Answered since the family 26 EPYC measured oneDNN on and off: widened x3.577 (oneDNN
    # x3.360 from that pair, instruction set x1.064), it covers every configuration.
    assert onednn_off["answer covers %"] == "100.000"
    assert onednn_off["machine widening"] == "x3.577"
    assert not onednn_off["refusal"]
