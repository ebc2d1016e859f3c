"""Verified answers (`application.verify`): which run counts, every wording, the limit
rules, the sweep that verifies; and ``memplan size ... --verify``, its sweep faked."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from application import verify as verification
from application import verify_here
from application.verify import Claim, Verdict
from core import profiles, store
from core.errors import StoreError
from core.units import GIB, budget_argument, gib_words
from core.workloads.alexnet import AlexNetConfig
from core.workloads.unet3d import UNetConfig
from memplan import cli as memplan_cli
from memplan import sweep as memplan_sweep
from memplan import verify as memplan_verify
from modeling.sizing import Basis, BatchAnswer, ImageSizeAnswer
from presentation.verification import markdown
from profiling.lifecycle import SweepPlan
from profiling.sweep import expand_grid
from tests.conftest import build_record, synthetic_database

# build_record's machine ("Test CPU") and another one.
HERE = profiles.profile_of(build_record().row())
ELSEWHERE = {"cpu_vendor": "AMD", "cpu_model": "AMD EPYC", "cpu_isa": "avx2"}
BUDGET = 64 * GIB
ANSWER = UNetConfig((208, 208, 208), 2)
NEXT = UNetConfig((224, 224, 224), 2)
BASIS = Basis("symbolic", "90% split-conformal upper bound", 0.9, False, "")


def image(**changes: Any) -> Claim:
    """The issue's answer: 208^3 at batch 2 fits 64 GiB, 224^3 does not; for this machine."""
    values: dict[str, Any] = dict(
        question=verification.IMAGE,
        answered=ANSWER,
        next_up=NEXT,
        budget_bytes=BUDGET,
        machine=HERE.key,
        machine_label=HERE.label,
        model="symbolic",
    )
    return Claim(**(values | changes))


def run(config: UNetConfig | AlexNetConfig, **overrides: Any) -> dict[str, Any]:
    """A runs-table row of ``config`` on this machine: ok at 61.2 GiB under a 64 GiB limit.

    Its sampler saw the same peak as the kernel's high-water mark unless told otherwise.
    """
    peak = overrides.get("peak_hwm_bytes", int(61.2 * GIB))
    columns = {
        "workload": config.workload,
        "batch_size": config.batch_size,
        "peak_hwm_bytes": peak,
        "peak_sampled_bytes": peak,
        "sample_interval_s": 0.1,
        "memory_limit_bytes": BUDGET,
        "created_at": "2026-01-01T00:00:00+00:00",
        **dict(zip(("depth", "height", "width"), config.image_shape, strict=True)),
    }
    return build_record(**(columns | overrides)).row()


def runs(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def said(claim: Claim, *rows: dict[str, Any]) -> verification.Verification:
    return verification.verify(claim, runs(*rows) if rows else pd.DataFrame())


# --- the claims of the two answers ----------------------------------------------------------


def test_an_image_answer_claims_its_side_and_the_next_side_at_its_batch() -> None:
    answer = ImageSizeAnswer(2, BUDGET, 208, 55 * GIB, 60 * GIB, 224, 70.0 * GIB, BASIS)

    claim = verification.claim_for(answer, "unet3d", {"base_filters": 8}, "abc", "a machine")

    assert claim.answered == UNetConfig((208,) * 3, 2, base_filters=8)
    assert claim.next_up == UNetConfig((224,) * 3, 2, base_filters=8)
    assert (claim.question, claim.budget_bytes, claim.model) == ("image", BUDGET, "symbolic")
    assert (claim.machine, claim.machine_label) == ("abc", "a machine")


def test_a_batch_answer_claims_its_batch_and_the_next_batch_at_its_image() -> None:
    answer = BatchAnswer((240, 240, 144), BUDGET, 3, 50 * GIB, 60 * GIB, 4, 70.0 * GIB, BASIS)

    claim = verification.claim_for(answer, "unet3d", {}, "abc")

    assert claim.answered == UNetConfig((240, 240, 144), 3)
    assert claim.next_up == UNetConfig((240, 240, 144), 4)


def test_an_answer_where_everything_fits_has_no_next_size() -> None:
    answer = BatchAnswer((32, 32, 32), BUDGET, 4096, GIB, GIB, None, None, BASIS)

    assert verification.claim_for(answer, "unet3d", {}, "abc").next_up is None


# --- which run counts -----------------------------------------------------------------------


def test_the_latest_ok_oom_or_skipped_run_of_exactly_the_configuration_counts() -> None:
    older = run(ANSWER, peak_hwm_bytes=60 * GIB, created_at="2026-01-01T00:00:00+00:00")
    newer = run(ANSWER, peak_hwm_bytes=62 * GIB, created_at="2026-02-01T00:00:00+00:00")

    found = verification.latest_run(ANSWER, runs(newer, older), HERE.key)

    assert found is not None
    assert (found.run_id, found.status, found.peak_bytes) == (newer["run_id"], "ok", 62 * GIB)


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"base_filters": 8}, id="another network knob"),
        pytest.param({"precision": "mixed_float16"}, id="another precision"),
        pytest.param({"batch_size": 3}, id="another batch"),
        pytest.param({"depth": 192}, id="another shape"),
        pytest.param(ELSEWHERE, id="another machine"),
        pytest.param({"status": "killed"}, id="killed"),
        pytest.param({"status": "error"}, id="failed"),
        pytest.param({"status": "timeout"}, id="timed out"),
        pytest.param({"peak_hwm_bytes": None}, id="ok without a high-water mark"),
    ],
)
def test_a_run_of_anything_else_does_not_count(other: dict[str, Any]) -> None:
    assert verification.latest_run(ANSWER, runs(run(ANSWER, **other)), HERE.key) is None


def test_a_later_run_that_says_nothing_leaves_the_earlier_measurement() -> None:
    measured = run(ANSWER, created_at="2026-01-01T00:00:00+00:00")
    killed = run(ANSWER, status="killed", created_at="2026-03-01T00:00:00+00:00")

    found = verification.latest_run(ANSWER, runs(measured, killed), HERE.key)

    assert found is not None and found.run_id == measured["run_id"]


def test_only_a_run_at_the_steps_the_models_were_fitted_at_counts() -> None:
    # build_record's runs train 3 steps; a 1-step smoke run of the answer says nothing of it.
    smoke = run(ANSWER, steps=1, peak_hwm_bytes=int(70.0 * GIB))
    fitted_at_3 = image(steps=3)

    assert verification.latest_run(ANSWER, runs(smoke), HERE.key, steps=3) is None
    assert said(fitted_at_3, smoke).verdict is Verdict.PREDICTION
    assert said(fitted_at_3, smoke, run(ANSWER)).verdict is Verdict.VERIFIED
    assert verification.sweep_request(fitted_at_3).steps == 3  # it verifies at those steps
    assert verification.sweep_request(image()).steps == 6  # not said: the default steps


def test_an_answer_for_several_machines_has_no_run_of_its_own() -> None:
    assert verification.latest_run(ANSWER, runs(run(ANSWER)), None) is None


def test_the_high_water_mark_is_the_measured_peak_not_the_sampled_one() -> None:
    row = run(ANSWER, peak_hwm_bytes=63 * GIB, peak_sampled_bytes=int(63.1 * GIB))

    assert "fits at 63 GiB (measured)" in said(image(), row).text


def test_a_sampled_peak_that_missed_a_spike_is_quoted_beside_the_high_water_mark() -> None:
    # The mixed_bfloat16 run: the 0.1 s sampler saw 5.4% less than the kernel did.
    row = run(ANSWER, peak_hwm_bytes=int(7.78 * GIB), peak_sampled_bytes=int(7.36 * GIB))

    result = said(image(budget_bytes=8 * GIB), row)

    assert result.verdict is Verdict.VERIFIED
    assert result.text.startswith(
        "verified: 208x208x208 at batch 2 measured 7.78 GiB "
        "(high-water mark; the 0.1 s sampler saw 7.36 GiB), which fits in 8 GiB; "
    )


def test_a_refuting_run_quotes_both_peaks_where_they_differ() -> None:
    row = run(ANSWER, peak_hwm_bytes=int(70.1 * GIB), peak_sampled_bytes=int(63.5 * GIB))

    assert said(image(), row).text.startswith(
        "refuted: 208x208x208 at batch 2 measured 70.1 GiB "
        "(high-water mark; the 0.1 s sampler saw 63.5 GiB): it does NOT fit in 64 GiB; "
    )


# --- the words ------------------------------------------------------------------------------


def test_an_answer_no_run_measured_is_a_prediction_with_the_command_that_verifies_it() -> None:
    result = said(image())

    assert result.verdict is Verdict.PREDICTION
    command = (
        "memplan size image --workload unet3d --batch-size 2 --budget 64GiB --headroom 0 "
        f"--model symbolic --machine {HERE.key} --verify"
    )
    assert result.command == command
    assert result.line == (
        f"a prediction, not verified by a run: verify it with `{command}` or the Sizing page's "
        "Verify button"
    )


def test_verified_with_the_next_size_measured_above_the_budget() -> None:
    result = said(image(), run(ANSWER), run(NEXT, peak_hwm_bytes=int(72.9 * GIB)))

    assert result.verdict is Verdict.VERIFIED
    assert result.line == (
        "verified: 208x208x208 at batch 2 fits at 61.2 GiB (measured); "
        "224x224x224 measured at 72.9 GiB"
    )


def test_verified_with_the_next_size_stopped_at_the_limit() -> None:
    stopped = run(NEXT, status="oom", peak_hwm_bytes=None, message="over the memory limit")

    assert said(image(), run(ANSWER), stopped).line == (
        "verified: 208x208x208 at batch 2 fits at 61.2 GiB (measured); "
        "224x224x224 stopped at the 64 GiB limit"
    )


def test_verified_with_the_next_size_skipped_says_why() -> None:
    reason = "estimated peak 70.00 GiB (the symbolic model's upper bound) exceeds the limit"
    skipped = run(NEXT, status="skipped", peak_hwm_bytes=None, message=reason)

    assert said(image(), run(ANSWER), skipped).line == (
        f"verified: 208x208x208 at batch 2 fits at 61.2 GiB (measured); 224x224x224 skipped: "
        f"{reason}"
    )


def test_verified_with_the_next_size_not_measured_or_none() -> None:
    assert said(image(), run(ANSWER)).text.endswith("; 224x224x224 not measured")
    assert said(image(next_up=None), run(ANSWER)).text.endswith("; nothing larger to try")


def test_a_next_size_that_fits_too_makes_the_answer_the_safe_side() -> None:
    result = said(image(), run(ANSWER), run(NEXT, peak_hwm_bytes=63 * GIB))

    assert result.verdict is Verdict.VERIFIED
    assert result.text.endswith(
        "224x224x224 measured at 63 GiB, which fits too: the answer is on the safe side"
    )


def test_a_batch_answer_names_the_next_batch() -> None:
    claim = image(
        question=verification.BATCH,
        answered=UNetConfig((240, 240, 144), 3),
        next_up=UNetConfig((240, 240, 144), 4),
    )
    rows = run(claim.answered), run(claim.next_up, peak_hwm_bytes=80 * GIB)

    assert said(claim, *rows).line == (
        "verified: 240x240x144 at batch 3 fits at 61.2 GiB (measured); batch 4 measured at 80 GiB"
    )
    assert said(claim).command.startswith(
        "memplan size batch --workload unet3d --image-size 240x240x144 --budget 64GiB --headroom 0"
    )


def test_a_run_above_the_budget_refutes_the_answer() -> None:
    result = said(image(), run(ANSWER, peak_hwm_bytes=int(70.1 * GIB)))

    assert result.verdict is Verdict.REFUTED
    assert result.line == (
        "refuted: 208x208x208 at batch 2 measured 70.1 GiB: it does NOT fit in 64 GiB; "
        "224x224x224 not measured"
    )


def test_a_run_stopped_at_the_budget_refutes_the_answer() -> None:
    result = said(image(), run(ANSWER, status="oom", peak_hwm_bytes=None))

    assert result.verdict is Verdict.REFUTED
    assert result.text.startswith(
        "refuted: 208x208x208 at batch 2 stopped at the 64 GiB limit: it does NOT fit in 64 GiB"
    )


def test_a_run_stopped_below_the_budget_proves_nothing() -> None:
    stopped = run(ANSWER, status="oom", peak_hwm_bytes=None, memory_limit_bytes=32 * GIB)

    result = said(image(), stopped)

    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.line == (
        "not verified: 208x208x208 at batch 2 stopped at the 32 GiB limit of an earlier run, "
        "below the 64 GiB budget"
    )


def test_a_skipped_answer_is_not_verified_and_says_why() -> None:
    skipped = run(ANSWER, status="skipped", peak_hwm_bytes=None, message="no room now")

    result = said(image(), skipped)

    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.line == "not verified: the run of 208x208x208 at batch 2 was skipped: no room now"
    assert result.command == ""


def test_the_page_shows_the_words_escaped_and_the_command_as_code() -> None:
    claim = image(machine="<b>", model="a_b")
    prediction = verification.verify(claim, pd.DataFrame())
    skipped = said(image(), run(ANSWER, status="skipped", message="*bold* <i>"))

    assert markdown(prediction) == (
        "a prediction, not verified by a run: verify it with "
        f"`{prediction.command}` or the button below"
    )
    assert "'<b>'" in prediction.command  # quoted for the shell
    assert "\\*bold\\* \\<i\\>" in markdown(skipped) and "<i>" not in markdown(skipped)


def test_budgets_read_in_whole_gib_when_whole_and_three_figures_otherwise() -> None:
    assert gib_words(64 * GIB) == "64 GiB"
    assert gib_words(int(213.33 * GIB)) == "213 GiB"
    assert gib_words(0.5 * GIB) == "0.500 GiB"


def test_the_budget_argument_parses_back_to_the_budget() -> None:
    assert budget_argument(64 * GIB) == "64GiB"
    assert budget_argument(1500 * 2**20) == "1500MiB"
    assert budget_argument(1500 * 2**20 + 7) == "1500MiB"  # under a MiB below


def test_the_command_names_only_the_knobs_that_differ_from_the_network_default() -> None:
    claim = image(
        answered=UNetConfig((208,) * 3, 2, base_filters=8, precision="mixed_float16"),
        model="",
        machine=None,
    )

    assert verification.verify_command(claim, Path("/data/x.duckdb")) == (
        "memplan size image --workload unet3d --batch-size 2 --budget 64GiB --headroom 0 "
        "--base-filters 8 --precision mixed_float16 --db /data/x.duckdb --verify"
    )


def test_the_command_asks_the_question_as_a_person_types_it_budget_and_headroom() -> None:
    # Issue 26 finding 4: the page's commands read `--budget 54613MiB`, what 64 GiB left
    # once 20% headroom was kept; the command now asks the question as it was asked.
    usable = int(64 * GIB / 1.2)
    answer = ImageSizeAnswer(2, usable, 160, 40 * GIB, 50 * GIB, 176, 60.0 * GIB, BASIS)
    claim = verification.claim_for(answer, "unet3d", {}, "abc", "", asked=(64 * GIB, 20.0))

    assert claim.budget_bytes == usable  # the verifying runs' memory limit
    assert verification.verify_command(claim) == (
        "memplan size image --workload unet3d --batch-size 2 --budget 64GiB --headroom 20 "
        "--model symbolic --machine abc --verify"
    )


# --- can it be verified here ----------------------------------------------------------------


def test_this_machines_answer_within_what_it_can_give_can_be_verified() -> None:
    assert verify_here.refusal(image(), HERE.key, BUDGET) is None


def test_another_machines_answer_needs_that_machine() -> None:
    reason = verify_here.refusal(image(), "0123456789", 512 * GIB)

    assert reason == (
        f"this answer is for {HERE.label} (profile {HERE.key}), not this machine "
        "(profile 0123456789): verifying it needs a run on a machine of that profile "
        "(the same command, run there)"
    )


def test_an_answer_for_several_machines_cannot_be_verified() -> None:
    reason = verify_here.refusal(image(machine=None), HERE.key, 512 * GIB)

    assert reason is not None and reason.startswith("this answer rests on the runs of several")


def test_a_budget_above_what_this_machine_can_give_names_both_and_the_slurm_sweep() -> None:
    reason = verify_here.refusal(image(), HERE.key, int(15.2 * GIB))

    assert reason == (
        "the 64 GiB budget is more than this machine can safely give a run now (15.2 GiB: at "
        "most 75% of its RAM, keeping 2 GiB free for the host): measure it on a bigger machine "
        "(its runs count for that machine's own profile), e.g. a Slurm node with that memory: "
        "`memplan sweep --workload unet3d --image-sizes 208 224 --batch-sizes 2 "
        "--base-filters 16 --levels 5 --in-channels 1 --classes 1 --precisions float32 "
        "--upsamplings transpose --executor slurm --partition P --mem 65GiB` (docs/slurm.md)"
    )


# --- the sweep that verifies ------------------------------------------------------------------


def test_the_sweep_measures_the_answer_and_the_next_size_under_the_budget() -> None:
    request = verification.sweep_request(image())

    assert (request.points, request.memory_limit_bytes) == (2, BUDGET)
    # What verifying shows and stores as the sweep's command (`memplan.sweep.command_of`).
    assert memplan_sweep.command_of(request.job(Path("/db/x.duckdb"))) == shlex.join(
        [
            "memplan",
            "sweep",
            "--workload",
            "unet3d",
            "--image-sizes",
            "208",
            "224",
            "--batch-sizes",
            "2",
            "--base-filters",
            "16",
            "--levels",
            "5",
            "--in-channels",
            "1",
            "--classes",
            "1",
            "--precisions",
            "float32",
            "--upsamplings",
            "transpose",
            "--framework",
            "tensorflow",
            "--steps",
            str(request.steps),
            "--memory-limit",
            str(BUDGET),
            # The next size up runs though its bound is over the budget: the limit stops it.
            "--run-over-bound",
            "--db",
            "/db/x.duckdb",
        ]
    )


def test_a_batch_answers_sweep_varies_only_the_batch() -> None:
    claim = image(
        question=verification.BATCH,
        answered=UNetConfig((240, 240, 144), 3),
        next_up=UNetConfig((240, 240, 144), 4),
    )

    grid = verification.sweep_request(claim).grid

    assert (grid.image_sizes, grid.batch_sizes) == (((240, 240, 144),), (3, 4))


def test_an_alexnet_sweep_names_only_its_own_knobs_and_one_point_without_a_next_size() -> None:
    claim = image(answered=AlexNetConfig((224, 224), 32, classes=10), next_up=None)

    request = verification.sweep_request(claim)

    assert request.points == 1
    assert request.grid.to_dict() == {
        "workload": "alexnet",
        "image_sizes": ["224"],
        "batch_sizes": [32],
        "in_channels": [3],
        "classes": [10],
        "precisions": ["float32"],
    }


# --- memplan size ... --verify, the sweep faked -----------------------------------

CHEAP = ["--models", "least_squares", "--seeds", "2", "--extrapolation-seeds", "1"]
# test_modeling_cli's answer on these runs: 128^3 fits 6 GiB at batch 2, 144^3 does not.
SIZE_IMAGE = ["size", "image", "--budget", "6GiB", "--headroom", "0", "--batch-size", "2"]
ANSWERED, FOLLOWING = UNetConfig((128,) * 3, 2), UNetConfig((144,) * 3, 2)


@pytest.fixture(scope="module")
def evaluated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic runs, evaluated: built once for the session (test_memplan_cli's too)."""
    return synthetic_database(tmp_path_factory, *CHEAP)


@pytest.fixture
def db(evaluated_template: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> Path:
    capsys.readouterr()
    return Path(shutil.copy(evaluated_template, tmp_path / "runs.duckdb"))


class FakeSweep:
    """Stands in for `memplan.sweep.sweep_here`: stores ``records`` and returns ``code``."""

    def __init__(self, db: Path, records: list, code: int = 0) -> None:
        self.db, self.records, self.code = db, records, code
        self.calls: list[dict[str, Any]] = []

    def __call__(self, plan: SweepPlan, **flags: Any) -> int:
        self.calls.append(
            dict(db_path=plan.db_path, grid=plan.grid, settings=plan.settings, command=plan.command)
        )
        self.calls[-1].update(flags)
        for record in self.records:
            store.insert_run(self.db, record)
        return self.code


def measured(config: UNetConfig, **overrides: Any):
    """A run of ``config``; an ok one's sampler saw its high-water mark."""
    values = dict(created_at="2026-01-01T00:00:00+00:00", memory_limit_bytes=6 * GIB, batch_size=2)
    values |= dict(zip(("depth", "height", "width"), config.image_shape, strict=True))
    if overrides.get("peak_hwm_bytes") is not None:
        values["peak_sampled_bytes"] = overrides["peak_hwm_bytes"]
    return build_record(**(values | overrides))


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine is the test runs' ("Test CPU"), and can give a run 16 GiB."""
    monkeypatch.setattr(
        memplan_verify, "this_profile", lambda precision="float32", framework="tensorflow": HERE
    )
    monkeypatch.setattr(verify_here, "safe_limit_bytes", lambda: 16 * GIB)


def fake_sweep(monkeypatch: pytest.MonkeyPatch, sweep: FakeSweep) -> FakeSweep:
    monkeypatch.setattr(memplan_verify, "sweep_here", sweep)
    return sweep


def output_lines(capsys: pytest.CaptureFixture) -> tuple[list[str], str]:
    captured = capsys.readouterr()
    return captured.out.splitlines(), captured.err


def test_an_answer_without_verify_says_it_is_a_prediction(db: Path, capsys) -> None:
    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db)]) == 0

    lines, _ = output_lines(capsys)
    (line,) = [line for line in lines if "verified by a run" in line]
    assert line.startswith("a prediction, not verified by a run: verify it with `memplan size ")
    assert f"--db {db} --verify`" in line


def test_an_answer_a_stored_run_verified_says_so_without_verify(db: Path, capsys) -> None:
    store.insert_run(db, measured(ANSWERED, peak_hwm_bytes=5 * GIB))

    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db)]) == 0

    lines, _ = output_lines(capsys)
    assert (
        "verified: 128x128x128 at batch 2 fits at 5 GiB (measured); 144x144x144 not measured"
        in lines
    )


def test_verify_runs_the_two_point_sweep_and_exits_0_when_the_answer_fits(
    db: Path, here: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    sweep = fake_sweep(
        monkeypatch,
        FakeSweep(
            db,
            [
                measured(ANSWERED, peak_hwm_bytes=int(5.2 * GIB)),
                measured(FOLLOWING, status="oom", peak_hwm_bytes=None),
            ],
        ),
    )

    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db), "--verify"]) == 0

    lines, err = output_lines(capsys)
    assert lines[-1] == (
        "verified: 128x128x128 at batch 2 fits at 5.20 GiB (measured); "
        "144x144x144 stopped at the 6 GiB limit"
    )
    assert not any(line.startswith("a prediction") for line in lines) and err == ""
    (call,) = sweep.calls  # in this process: no `memplan sweep` child
    assert call["db_path"] == db and call["run_over_bound"] is True
    assert call["settings"].memory_limit_bytes == 6 * GIB
    assert [c.image_shape for c in expand_grid(call["grid"])] == [(128,) * 3, (144,) * 3]
    command = call["command"]
    assert command.startswith(
        "memplan sweep --workload unet3d --image-sizes 128 144 --batch-sizes 2 "
    )
    assert command.endswith(f"--memory-limit {6 * GIB} --run-over-bound --db {db.resolve()}")
    assert f"verifying: {command}" in lines


def test_verify_with_json_prints_only_json_on_stdout_and_keeps_the_exit_code(
    db: Path, here: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    fake_sweep(monkeypatch, FakeSweep(db, [measured(ANSWERED, status="oom", peak_hwm_bytes=None)]))

    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db), "--verify", "--json"]) == 1

    captured = capsys.readouterr()
    said = json.loads(captured.out)
    assert said["verification"]["verdict"] == "refuted" and said["answer"]["side"] == 128
    assert captured.err.startswith("verifying: memplan sweep --workload unet3d ")


def test_verify_exits_1_when_a_run_refutes_the_answer(
    db: Path, here: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    fake_sweep(monkeypatch, FakeSweep(db, [measured(ANSWERED, status="oom", peak_hwm_bytes=None)]))

    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db), "--verify"]) == 1

    lines, _ = output_lines(capsys)
    assert lines[-1].startswith(
        "refuted: 128x128x128 at batch 2 stopped at the 6 GiB limit: it does NOT fit in 6 GiB"
    )


def test_verify_exits_2_when_the_sweep_skipped_the_answer(
    db: Path, here: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    skipped = measured(ANSWERED, status="skipped", peak_hwm_bytes=None, message="no room now")
    fake_sweep(monkeypatch, FakeSweep(db, [skipped]))

    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db), "--verify"]) == 2

    _, err = output_lines(capsys)
    assert err == (
        "error: not verified: the run of 128x128x128 at batch 2 was skipped: no room now\n"
    )


def test_verify_passes_on_an_interrupted_sweep_and_reports_a_failed_one(
    db: Path, here: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    fake_sweep(monkeypatch, FakeSweep(db, [], code=130))
    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db), "--verify"]) == 130

    def locked(*args: Any, **kwargs: Any) -> int:
        raise StoreError("the database is locked by another sweep")

    monkeypatch.setattr(memplan_verify, "sweep_here", locked)
    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db), "--verify"]) == 2
    _, err = output_lines(capsys)
    assert err.endswith("error: the database is locked by another sweep\n")


def test_verify_above_what_this_machine_can_give_exits_2_without_measuring(
    db: Path, here: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    sweep = fake_sweep(monkeypatch, FakeSweep(db, []))

    code = memplan_cli.main(
        ["size", "batch", "--image-size", "64", "--budget", "20GiB", "--headroom", "0"]
        + [
            "--db",
            str(db),
            "--verify",
        ]
    )

    assert code == 2 and sweep.calls == []
    lines, err = output_lines(capsys)
    assert lines[1].startswith("largest batch: ")  # the answer still printed
    assert err.startswith(
        "error: cannot verify here: the 20 GiB budget is more than this machine can safely "
        "give a run now (16 GiB: "
    )
    assert err.count("\n") == 1


def test_verify_of_another_machines_answer_exits_2_without_measuring(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    sweep = fake_sweep(monkeypatch, FakeSweep(db, []))
    other = profiles.profile_of(build_record(**ELSEWHERE).row())
    monkeypatch.setattr(
        memplan_verify, "this_profile", lambda precision="float32", framework="tensorflow": other
    )

    assert memplan_cli.main([*SIZE_IMAGE, "--db", str(db), "--verify"]) == 2

    _, err = output_lines(capsys)
    assert sweep.calls == []
    assert err.startswith(f"error: cannot verify here: this answer is for {HERE.label} (profile ")
    assert f"not this machine (profile {other.key})" in err
