"""The downloadable sizing report, built from the bundled models and runs.

The Dell–Intel study's question (240x240x144 at batch 16, 256 GiB, 20% headroom)
on the bundled Intel reference profile, and a question that profile measured
(128^3 at batch 4): what the report says, that it stands alone (no script, no
URL), and that stored text cannot become markup in it.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from datetime import UTC, datetime
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from application import sizing, stored
from application.sizing import SizingError, SizingQuestion
from core import profiles, published, store, version, workloads
from core.units import GIB
from core.version import __version__
from core.workloads.unet3d import UNetConfig
from modeling.decision import Decision, approx_gib
from modeling.evaluation.bounds import ConformalBound
from modeling.sizing import memory_to_buy
from modeling.stored.predictor import Predictor
from presentation import charts_published, sizing_report, sizing_report_evidence, sizing_report_html
from tests.conftest import built_once, bundled_exports_database

INTEL = "9b59349f74"  # the bundled Intel reference profile
DELL = UNetConfig((240, 240, 144), 16)
MEASURED = UNetConfig((128, 128, 128), 4)
BUDGET_GIB, HEADROOM_PCT = 256.0, 20.0
CREATED = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
HOSTILE = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private database with every bundled run (what a fresh checkout's holds): a copy of
    the session's, imported once (`built_once`)."""
    template = built_once(tmp_path_factory, "bundled_exports.duckdb", bundled_exports_database)
    return Path(shutil.copy(template, tmp_path_factory.mktemp("report") / "memplan.duckdb"))


@pytest.fixture(scope="module")
def models(db: Path) -> list[Predictor]:
    return stored.load_predictors(db, workload="unet3d", machine=INTEL)


@pytest.fixture(scope="module")
def runs(db: Path) -> pd.DataFrame:
    return store.load_runs(db, store.RunFilter(workload="unet3d", machine=INTEL))


def question_of(
    config: UNetConfig, budget_gib: float = BUDGET_GIB, model: str = "symbolic"
) -> SizingQuestion:
    """The report's question: ``config`` on ``budget_gib`` GiB, asked of ``model``."""
    return SizingQuestion(
        kind=sizing.BUY,
        workload=config.workload,
        machine=INTEL,
        knobs=tuple((knob, getattr(config, knob)) for knob in workloads.of(config).NETWORK_KNOBS),
        budget_bytes=round(budget_gib * GIB),
        headroom_pct=HEADROOM_PCT,
        model=model,
        image_shape=tuple(config.image_shape),
        batch_size=config.batch_size,
    )


def models_of(db: Path, models: list[Predictor]) -> sizing.Models:
    choice = stored.choose_machine(db, "unet3d", INTEL)
    return sizing.models_of("unet3d", choice, sizing.Loaded(models, pd.DataFrame()))


def report_for(
    db: Path, models: list[Predictor], runs: pd.DataFrame, config: UNetConfig
) -> sizing_report.SizingReport:
    machine = stored.choose_machine(db, "unet3d", INTEL)
    source = sizing_report.ReportSource(machine.sentence(), created_at=CREATED)
    return sizing_report.build_report(question_of(config), models_of(db, models), runs, source)


@pytest.fixture(scope="module")
def dell(db: Path, models: list[Predictor], runs: pd.DataFrame) -> sizing_report.SizingReport:
    return report_for(db, models, runs, DELL)


@pytest.fixture(scope="module")
def dell_html(dell: sizing_report.SizingReport) -> str:
    return sizing_report_html.render_html(dell)


def text_of(html: str) -> str:
    """The words a reader sees: tags dropped, entities read, whitespace collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_dell_question_headlines_verify_first_with_the_spread_and_the_left_out(
    dell: sizing_report.SizingReport, dell_html: str
) -> None:
    shown = text_of(dell_html)

    assert dell.headline == "Predicted to fit, 12x beyond the largest measured run: verify first"
    assert dell.headline in shown
    assert "Credible models: 154–190 GiB across 6 of 10 models." in shown
    assert "163 GiB (symbolic regression (gplearn)" in shown
    assert "paper analytical (Eq. 1 + Eq. 2) (bound 1,118 GiB, 6.8x)" in shown
    assert "XGBoost (predicts 11.6 GiB)" in shown
    assert not dell.verified
    assert "Not verified: no run of exactly this configuration" in shown
    assert "memplan run --workload unet3d --image-size 240x240x144 --batch-size 16" in shown


def test_the_bound_is_described_with_its_coverage_and_held_out_evidence(
    dell: sizing_report.SizingReport, models: list[Predictor]
) -> None:
    symbolic = next(model for model in models if model.name == "symbolic")
    used = symbolic.bound_for(DELL)

    assert dell.bound is not None
    assert (dell.bound.coverage, dell.bound.n_configurations) == (
        used.coverage,
        used.n_calibration,
    )
    assert dell.bound.sentence.startswith("symbolic regression (gplearn) predicts 150 GiB")
    assert f"upper bound is 163 GiB, the prediction x{used.ratio:.3f}" in dell.bound.sentence
    assert used.source in dell.bound.sentence
    # Beyond the measured sizes: the forward-chaining bound, from 18 sizes-ahead configurations.
    assert used.source.startswith("forward-chaining by image size") and used.n_calibration == 18
    assert "of 18 distinct configurations" in dell.bound.sentence
    assert "Thin evidence: the bound is the worst of only 18 configurations." in dell.bound.sentence


def test_the_report_words_the_one_decision_and_it_refuses_another_profiles_models(
    db: Path, models: list[Predictor], runs: pd.DataFrame, dell: sizing_report.SizingReport
) -> None:
    # The page and the report word `application.sizing.decide`'s decision; neither rebuilds it.
    decided = sizing.decide(question_of(DELL), models_of(db, models), runs)
    assert decided.estimate is not None and dell.decision.estimate is not None
    assert (decided.estimate.name, decided.confidence) == (
        dell.decision.estimate.name,
        dell.decision.confidence,
    )
    assert [e.name for e in decided.credibility.every] == [model.name for model in models]
    elsewhere = dataclasses.replace(question_of(DELL), machine="259d139078")
    with pytest.raises(SizingError, match="the models are unet3d's on profile 9b59349f74"):
        sizing.decide(elsewhere, models_of(db, models), runs)


@pytest.fixture(scope="module")
def measured_decision(db: Path, models: list[Predictor], runs: pd.DataFrame) -> Decision:
    """The decision for a measured question: inside the range, so no extrapolation words."""
    return sizing.decide(question_of(MEASURED), models_of(db, models), runs)


def test_a_bound_from_few_configurations_is_called_thin_evidence(
    measured_decision: Decision,
) -> None:
    few = ConformalBound(
        0.9, 1.1, 9, "forward-chaining by image size, 2 folds, 9 distinct configurations"
    )

    sentence = sizing_report_evidence.BoundEvidence.of(measured_decision, few).sentence

    assert "its 90% conformal upper bound is" in sentence and "the prediction x1.100" in sentence
    assert "covered 90% of 9 distinct configurations the model was not fitted on" in sentence
    assert sentence.endswith("Thin evidence: the bound is the worst of only 9 configurations.")


def test_a_widened_bound_names_every_factor_it_is_the_prediction_times(
    measured_decision: Decision,
) -> None:
    # On 89ca53e a bound widened x1.081 for another machine read "178 GiB, the prediction
    # x1.081" although 152 x 1.081 = 164: only the conformal factor was named.
    bound = ConformalBound(0.9, 1.081, 18, "forward-chaining by image size, 5 folds")
    widened = [(1.081, "another machine"), (1.041, "host-to-host spread")]

    sentence = sizing_report_evidence.BoundEvidence.of(measured_decision, bound, widened).sentence

    factors = "x1.081 (conformal) x1.081 (another machine) x1.041 (host-to-host spread) = x1.216"
    assert f"the prediction {factors}, x1.081 being the multiplier that covered" in sentence
    assert "the prediction x1.081," not in sentence


def test_an_older_bound_says_it_counted_residuals_not_configurations(
    measured_decision: Decision,
) -> None:
    old = ConformalBound(0.9, 1.06, 15, "15 held-out extrapolation-split residuals, 3 seed(s)")

    sentence = sizing_report_evidence.BoundEvidence.of(measured_decision, old).sentence

    assert "split-conformal upper bound" in sentence
    assert "distinct configurations" not in sentence and "Thin evidence" not in sentence
    assert "of 15 held-out residuals" in sentence
    assert "re-run `memplan evaluate` for a bound counted by configuration" in sentence


def test_every_model_is_listed_credible_or_left_out_with_its_reason(
    dell: sizing_report.SizingReport, models: list[Predictor]
) -> None:
    lines = {line.name: line for line in dell.models}

    assert list(lines) == [model.name for model in models]
    assert [name for name, line in lines.items() if line.answers] == ["symbolic"]
    assert {name for name, line in lines.items() if line.credible} == {
        "refined",
        "least_squares",
        "symbolic",
        "hybrid_ratio",
        "hybrid_terms",
        "mlp",
    }
    assert "6.8x the models' median bound" in lines["paper"].reason
    assert lines["symbolic"].reason == ""


def test_the_published_points_and_why_ours_differ_are_shown_for_the_study_question(
    dell: sizing_report.SizingReport, dell_html: str
) -> None:
    shown = text_of(dell_html)

    assert dell.published_points == published.PUBLISHED_POINTS
    for point in published.PUBLISHED_POINTS:
        assert point.label in shown
    assert published.WHY_OURS_DIFFER in shown
    assert "They are about this question, so the chart draws them." in shown


def test_the_runs_table_lists_every_run_of_the_profile_with_its_peak(
    dell: sizing_report.SizingReport, runs: pd.DataFrame, dell_html: str
) -> None:
    largest = max(dell.runs, key=lambda run: run.peak_gib or 0)

    assert len(dell.runs) == len(runs)
    assert {run.run_id for run in dell.runs} == set(runs["run_id"])
    assert not any(run.this_config for run in dell.runs)
    assert (largest.image, largest.batch_size, largest.short_id) == (
        "112^3",
        8,
        largest.run_id[:12],
    )
    assert f"{largest.peak_gib:,.2f} GiB" in dell_html
    assert "skipped" in {run.status for run in dell.runs}


def test_the_runs_table_shows_the_sampled_peak_beside_the_high_water_mark(
    dell: sizing_report.SizingReport, dell_html: str
) -> None:
    largest = max(dell.runs, key=lambda run: run.peak_gib or 0)

    assert (
        '<th class="num">measured peak (high-water mark)</th><th class="num">sampled peak</th>'
        in dell_html
    )
    assert largest.sampled_gib is not None
    assert f"{largest.sampled_gib:,.2f} GiB" in dell_html


def test_a_measured_question_says_verified_and_marks_its_runs(
    db: Path, models: list[Predictor], runs: pd.DataFrame
) -> None:
    report = report_for(db, models, runs, MEASURED)
    shown = text_of(sizing_report_html.render_html(report))

    assert report.verified
    assert report.headline == "Fits, verified by a run (measured 10.6 GiB)"
    assert "Verified: 1 run(s) of exactly this configuration" in shown
    marked = [run for run in report.runs if run.this_config]
    assert [(run.image, run.batch_size, run.status) for run in marked] == [("128^3", 4, "ok")]
    assert "this question" in shown
    assert report.published_points == ()
    assert "They are about another question, so the chart does not draw them." in shown
    assert published.WHY_OURS_DIFFER in shown


def test_the_report_stands_alone_no_script_and_no_url(dell_html: str) -> None:
    assert "<script" not in dell_html.lower()
    assert "http" not in dell_html
    assert not re.search(r"\b(src|href)\s*=", dell_html)
    assert "@import" not in dell_html and "url(" not in dell_html
    assert dell_html.count("<svg") == 1
    assert "@media print" in dell_html


def test_the_version_is_core_versions_with_the_commit(dell_html: str) -> None:
    made_by = version.memplan_version()

    assert re.fullmatch(
        rf"memplan {re.escape(__version__)}, (commit [0-9a-f]{{12}}|unknown commit)", made_by
    )
    assert made_by in dell_html
    assert "2026-01-02 03:04 UTC" in dell_html


def test_the_report_takes_its_version_from_core_version(
    db: Path, models: list[Predictor], runs: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One source of truth: core.version's string, not pyproject.toml, reaches the report.
    monkeypatch.setattr(version, "__version__", "9.8.7")
    html = sizing_report_html.render_html(report_for(db, models, runs, DELL))
    assert re.search(r"memplan 9\.8\.7, (commit [0-9a-f]{12}|unknown commit)", html)
    assert f"memplan {__version__}," not in html


def test_the_commit_is_read_from_git_files_without_git(tmp_path: Path) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert version.memplan_version(tmp_path) == f"memplan {__version__}, unknown commit"

    git = tmp_path / ".git"
    git.mkdir()
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{sha} refs/heads/main\n")
    assert version.git_commit(tmp_path) == sha

    (git / "refs" / "heads").mkdir(parents=True)
    (git / "refs" / "heads" / "main").write_text(sha.replace("0", "f") + "\n")
    assert version.memplan_version(tmp_path) == f"memplan {__version__}, commit f123456789ab"


def test_stored_text_is_escaped_never_markup(
    db: Path, models: list[Predictor], runs: pd.DataFrame
) -> None:
    hostile_models = [
        dataclasses.replace(model, title=f"{model.title} {HOSTILE}") for model in models
    ]
    hostile_runs = runs.assign(message=HOSTILE)
    report = report_for(db, hostile_models, hostile_runs, DELL)

    html = sizing_report_html.render_html(report)

    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html  # titles and messages
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html.split("<svg", 1)[1]


# Clear the screen, turn red, set the window's title, a NUL, a link, text reversed.
CONTROLS = "\x1b[2J\x1b[31m \x1b]0;pwned\x07 \x00 \x1b]8;;http://x.test\x1b\\link \u202eevil"


def test_control_characters_in_stored_text_are_shown_escaped_never_raw(
    db: Path, models: list[Predictor], runs: pd.DataFrame
) -> None:
    hostile_models = [
        dataclasses.replace(model, title=f"{model.title} {CONTROLS}") for model in models
    ]
    report = report_for(db, hostile_models, runs.assign(message=CONTROLS), DELL)

    html = sizing_report_html.render_html(report)

    assert not [character for character in "\x00\x07\x1b\u202e" if character in html]
    assert "\\x1b]0;pwned\\x07" in html and "\\u202eevil" in html  # message and title
    assert "\\x1b[2J" in html.split("<svg", 1)[1]  # the chart's title


def test_a_bfloat16_answer_for_a_cpu_below_avx512_notes_that_onednn_does_not_run_it(
    db: Path, models: list[Predictor], runs: pd.DataFrame
) -> None:
    machine = stored.choose_machine(db, "unet3d", INTEL)
    avx2 = dataclasses.replace(machine.profile, cpu_isa="avx2", onednn_enabled=False)
    half = UNetConfig((64, 64, 64), 2, precision="mixed_bfloat16")

    def report(config: UNetConfig, profile) -> sizing_report.SizingReport:
        source = sizing_report.ReportSource(machine.sentence(), profile=profile, created_at=CREATED)
        asked = question_of(config, 16.0, "least_squares")
        return sizing_report.build_report(asked, models_of(db, models), runs, source)

    said = unescape(sizing_report_html.render_html(report(half, avx2)))
    assert f"Note: {profiles.HALF_WITHOUT_ONEDNN.format(precision='mixed_bfloat16')}" in said
    # The Xeon's own profile (oneDNN on, instruction set not recorded) has nothing to add.
    assert report(MEASURED, machine.profile).onednn_note == ""


def test_the_chart_frame_draws_the_question_the_model_and_the_published_points(
    models: list[Predictor], runs: pd.DataFrame
) -> None:
    symbolic = next(model for model in models if model.name == "symbolic")

    frame = charts_published.chart_frame(
        runs, DELL, symbolic, published=published.PUBLISHED_POINTS, budget_gib=BUDGET_GIB
    )

    series = set(frame["series"])
    assert series == set(charts_published.SERIES)
    line = frame[frame["series"] == charts_published.UPPER]
    assert list(line["batch_size"]) == list(range(1, 17))
    question = frame[frame["kind"] == charts_published.QUESTION_MARK].iloc[0]
    assert question["label"] == "240x240x144, batch 16: up to 163 GiB"
    assert question["gib"] == pytest.approx(line["gib"].iloc[-1])
    servers = frame[frame["kind"] == charts_published.SERVER]
    assert sorted(servers["gib"]) == [192, 384, 1536]
    measured = frame[frame["series"] == charts_published.MEASURED]
    assert len(measured) == (runs["status"] == "ok").sum()


def test_the_chart_without_a_model_or_study_draws_only_the_runs(runs: pd.DataFrame) -> None:
    frame = charts_published.chart_frame(runs, UNetConfig((64, 64, 64), 2), None)

    assert set(frame["series"]) == {charts_published.MEASURED}
    svg = charts_published.chart_svg(charts_published.measured_vs_predicted(frame))
    assert svg.startswith("<svg") and "<script" not in svg


def test_the_models_table_gives_left_out_models_a_reason_column_and_no_fits_verdict(
    dell: sizing_report.SizingReport, dell_html: str
) -> None:
    # Issue 26, finding 7: "XGBoost 13.6 GiB | 200 GiB | left out: … its bound falls below
    # the refined closed-form estimate", 200 GiB being above that estimate.
    table = dell_html[dell_html.index('<table id="models">') :]
    table = table[: table.index("</table>")]
    headers = [text_of(cell) for cell in re.findall(r"<th[^>]*>.*?</th>", table, re.S)]
    assert headers == [
        "model",
        "point prediction",
        "upper bound",
        "fits the budget?",
        "left out of the answer because",
    ]
    by_title = {m.title: m for m in dell.models}
    refined = by_title["refined analytical (closed form)"]
    for line in dell.models:
        if line.credible:
            assert (line.fits, line.reason) == ("yes", "")
            continue
        assert line.fits == "–" and line.reason
        if "falls below the refined closed-form estimate" in line.reason:
            # The bound shown is the one it is left out for: below the closed form.
            assert line.upper_bytes < refined.predicted_bytes
            assert f"its bound, {approx_gib(line.upper_bytes)}," in line.reason
    xgboost = by_title["XGBoost"]
    row = next(r for r in re.findall(r"<tr.*?</tr>", table, re.S) if "XGBoost" in r)
    cells = [text_of(cell) for cell in re.findall(r"<td[^>]*>.*?</td>", row, re.S)]
    assert cells[1:4] == ["11.6 GiB", approx_gib(xgboost.upper_bytes), "–"]
    assert cells[4] == xgboost.reason


def test_the_report_leads_with_the_memory_to_buy_and_names_the_machine_by_its_facts(
    db: Path, models: list[Predictor], runs: pd.DataFrame
) -> None:
    # Issue 26, finding 6: the downloaded report held no buy figure, and said "— this machine".
    machine = stored.choose_machine(db, "unet3d", INTEL)
    source = sizing_report.ReportSource(
        "for this machine", profile=machine.profile, created_at=CREATED
    )
    report = sizing_report.build_report(question_of(DELL), models_of(db, models), runs, source)
    html = sizing_report_html.render_html(report)
    symbolic = next(model for model in models if model.name == "symbolic")
    expected = memory_to_buy(symbolic, DELL.image_shape, DELL.batch_size, HEADROOM_PCT / 100)

    assert html.index('id="buy"') < html.index('id="decision"') < html.index('id="what-fits"')
    lead = text_of(html[html.index('id="buy">') + len('id="buy">') : html.index('id="decision"')])
    assert lead.startswith(f"Memory to buy: {expected.memory_gb} GB For 240x240x144 at batch 16")
    assert "the 90% upper bound" in lead and f"{HEADROOM_PCT:g}% headroom" in lead
    profile = machine.profile
    facts = text_of(html[html.index('id="machine-facts"') :].split("</dl>")[0])
    # The reference runs predate the instruction-set column: unknown, never guessed.
    assert f"CPU {profile.cpu_model}" in facts and profile.cpu_isa is None
    assert "Instruction set unknown" in facts
    assert f"Cores {profile.cores} Framework TensorFlow {profile.tensorflow_version}" in facts
    assert f"Profile id {INTEL}" in facts
    # Nowhere in the words (the chart's legend says "this machine profile" of its dots).
    words = re.sub(r"<svg.*?</svg>", "", html, flags=re.S)
    assert "this machine" not in text_of(words)
