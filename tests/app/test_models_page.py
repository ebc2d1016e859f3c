"""The Models page on a real database: curves, held-out predictions, errors, measurement floor,
for one machine profile at a time."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from application import sweep_job
from application.calibrate import fit_job
from application.stored import choose_machine
from application.stored import read as read_db
from core import database, profiles, store
from core.machine import this_profile
from modeling.evaluation.splits import point_ids
from modeling.features import measured_frame
from modeling.stored import tables as results
from presentation import formulas
from presentation.text import plain
from profiling import floor
from profiling.calibration import calibration_for
from tests.app.helpers import (
    ALEXNET_BATCHES,
    ALEXNET_SIDES,
    OTHER_MACHINE,
    alexnet_record,
    charts,
    database_without_evaluation,
    layers,
    open_page,
    profile_key,
    profile_label,
    shown,
    widget,
)

PAGE = "dashboard/models_page.py"
ALL_MODELS = [
    "paper",
    "refined",
    "least_squares",
    "symbolic",
    "hybrid_ratio",
    "hybrid_terms",
    "xgboost",
    "random_forest",
    "extra_trees",
    "mlp",
]
REFERENCE_BATCHES = {1, 2, 4, 8, 16}
REFERENCE_OK_RUNS = 39  # of the 46 bundled runs, seven were skipped

# A machine without runs is offered the bundled calibration grid (data/calibration.json).
CALIBRATION = calibration_for("unet3d")
CALIBRATION_SWEEP = CALIBRATION.sweep_command()


def models_page() -> AppTest:
    return open_page(PAGE)


def peak_chart(at: AppTest) -> dict:
    return layers(charts(at)[0])


def machine_note(at: AppTest) -> list[str]:
    """The note saying why the page does not open on this machine (it has no models)."""
    return [shown(info.value) for info in at.info if shown(info.value).startswith("This machine (")]


def other_infos(at: AppTest) -> list[str]:
    """Every info but the machine note."""
    notes = machine_note(at)
    return [shown(info.value) for info in at.info if shown(info.value) not in notes]


def test_the_page_offers_the_models_and_the_axes(shared_reference_db: Path) -> None:
    at = models_page()

    models = widget(at.button_group, "Models")
    assert models.options == [
        results.load_predictors(read_db(shared_reference_db))[i].title for i in range(10)
    ]
    assert models.value == ["paper", "refined", "symbolic"]
    axes = widget(at.radio, "Axes")
    assert (axes.options, axes.value) == (["Linear", "Log"], "Linear")
    assert not other_infos(at)  # an evaluation is stored: no hint


def test_measured_points_sit_over_one_curve_per_model_and_batch_size(
    shared_reference_db: Path,
) -> None:
    at = models_page()
    chart = peak_chart(at)

    measured = chart["measured"]["rows"]
    ok = store.load_runs(shared_reference_db, store.RunFilter(status="ok"))
    assert len(measured) == len(ok)
    curves = chart["predicted"]["rows"]
    lines = curves.groupby(["model", "batch_size"]).size()
    assert set(lines.index.get_level_values("model")) == {"paper", "refined", "symbolic"}
    assert set(lines.index.get_level_values("batch_size")) == REFERENCE_BATCHES
    assert len(lines) == 3 * len(REFERENCE_BATCHES)
    # Drawn up to the largest measured side (144), every valid side from 16.
    assert sorted(curves["side"].unique()) == list(range(16, 145, 16))


def test_choosing_more_models_and_log_axes_changes_the_curves(shared_reference_db: Path) -> None:
    at = models_page()
    widget(at.button_group, "Models").set_value(["symbolic", "xgboost"])
    widget(at.radio, "Axes").set_value("Log")
    at.run()

    predicted = peak_chart(at)["predicted"]
    assert set(predicted["rows"]["model"]) == {"symbolic", "xgboost"}
    assert predicted["encoding"]["x"]["scale"]["type"] == "log"
    assert predicted["encoding"]["y"]["scale"]["type"] == "log"


def test_drawing_past_the_measurements_extends_the_curves(shared_reference_db: Path) -> None:
    at = models_page()
    widget(at.select_slider, "Curves up to image side").set_value(256).run()

    assert peak_chart(at)["predicted"]["rows"]["side"].max() == 256


def test_parity_and_residuals_show_the_random_splits_held_out_predictions(
    shared_reference_db: Path,
) -> None:
    at = models_page()
    _, parity, residuals, _ = charts(at)  # the last: beside the published study

    held_out = layers(parity)["held_out"]["rows"]
    stored = results.load_predictions(read_db(shared_reference_db))
    shown = stored[
        (stored["split"] == "random") & stored["model"].isin(["paper", "refined", "symbolic"])
    ]
    assert len(held_out) == len(shown)
    assert set(held_out["model"]) == {"paper", "refined", "symbolic"}
    assert layers(residuals)["residuals"]["encoding"]["x"]["field"] == "side"

    widget(at.radio, "Residuals against").set_value("Measured peak").run()
    assert layers(charts(at)[2])["residuals"]["encoding"]["x"]["field"] == "measured_gib"


def test_measured_against_predicted_says_the_measured_peak_is_the_high_water_mark(
    shared_reference_db: Path,
) -> None:
    at = models_page()

    captions = [caption.value for caption in at.main.caption]
    [said] = [text for text in captions if text.startswith("Measured: ")]
    assert "kernel high-water mark (VmHWM), the peak every model is fit to" in said
    assert "the out-of-memory killer acts on resident memory, not on samples" in said


def test_the_error_table_formula_and_measurement_floor_are_shown(shared_reference_db: Path) -> None:
    at = models_page()

    (table,) = at.table[:1]
    errors = table.value
    assert len(errors) == len(ALL_MODELS)
    scores = results.load_scores(read_db(shared_reference_db))
    symbolic = scores[(scores["model"] == "symbolic") & (scores["split"] == "random")]
    row = errors.set_index("model").loc[plain("symbolic regression (gplearn)")]
    assert row["MAPE %"] == f"{symbolic['mape_pct'].mean():.1f}"
    assert row["worst %"] == f"{symbolic['max_ape_pct'].max():.1f}"
    assert r"\text{megavoxels}" in at.latex[0].value

    runs = store.load_runs(shared_reference_db)
    gap = floor.sampling_gap(runs)
    metrics = {metric.label: metric.value for metric in at.metric}
    assert metrics["Sampling gap, median"] == f"{gap.median_pct:.2f}%"
    assert metrics["Sampling gap, largest"] == f"{gap.max_pct:.2f}%"
    largest = floor.largest_spread_pct(floor.repeat_spreads(runs))
    assert metrics["Run-to-run spread"] == f"{largest:.2f}%"


def test_without_an_evaluation_the_page_says_how_and_still_draws_the_analytical_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = database_without_evaluation(tmp_path / "fresh.duckdb")
    monkeypatch.setenv(database.DB_ENV_VAR, str(db))
    at = models_page()

    # No profile has models: the page opens on the one with the most runs, the bundled.
    key = widget(at.main.selectbox, "Machine").value
    assert shown(at.info[0].value).startswith("Only the analytical models are shown: this ")
    configurations = point_ids(measured_frame(store.load_runs(db))).nunique()
    assert f"has {configurations} distinct measured configurations of the 3D U-Net" in shown(
        at.warning[0].value
    )
    assert at.code[0].value == (f"memplan evaluate --workload unet3d --machine {key} --db {db}")
    models = widget(at.button_group, "Models")
    assert models.value == ["paper", "refined"]
    chart = peak_chart(at)
    assert set(chart["predicted"]["rows"]["model"]) == {"paper", "refined"}
    assert len(chart["measured"]["rows"]) == len(store.load_runs(db, store.RunFilter(status="ok")))
    # Analytical models are not fit to peaks: every run is out of sample for them.
    held_out = layers(charts(at)[1])["held_out"]["rows"]
    assert len(held_out) == 2 * len(chart["measured"]["rows"])
    assert not at.latex


def test_a_database_without_runs_still_draws_the_analytical_curves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = database_without_evaluation(tmp_path / "empty.duckdb", keep_runs=0)
    monkeypatch.setenv(database.DB_ENV_VAR, str(db))
    at = models_page()

    assert any("No measured run of the 3D U-Net" in info.value for info in at.info)
    chart = peak_chart(at)
    assert chart["measured"]["rows"].empty
    assert set(chart["predicted"]["rows"]["batch_size"]) == REFERENCE_BATCHES
    # Without runs anywhere, the page opens on this machine and says how to measure it.
    assert widget(at.main.selectbox, "Machine").value == this_profile().key
    assert at.code[0].value.startswith(CALIBRATION_SWEEP)
    # Above the page, the first start's offer of the bundled runs (`dashboard.first_start`).
    assert [button.label for button in at.main.button] == [
        "Load the bundled measurements",
        "Launch this sweep",
    ]


# --- the AlexNet --------------------------------------------------------------------------


def alexnet_page() -> AppTest:
    at = models_page()
    widget(at.main.selectbox, "Workload").set_value("alexnet").run()
    assert not at.exception
    return at


def ok_alexnet_runs(db: Path):
    runs = store.load_runs(db, store.RunFilter(status="ok"))
    return runs[runs["workload"] == "alexnet"]


def test_alexnet_runs_without_an_evaluation_get_the_command_and_the_analytical_curves(
    shared_alexnet_runs_db: Path,
) -> None:
    at = models_page()
    # The U-Net first: its bundled evaluation, its 46 runs' measured points only.
    assert not other_infos(at)
    assert len(peak_chart(at)["measured"]["rows"]) == REFERENCE_OK_RUNS
    widget(at.main.selectbox, "Workload").set_value("alexnet").run()

    (info,) = at.info
    ok = ok_alexnet_runs(shared_alexnet_runs_db)
    assert shown(info.value).startswith(
        f"Only the analytical models are shown: this database has {len(ok)} measured run(s) "
        f"of the AlexNet-style 2D CNN (Torres et al. 2021) for {profile_label()} — the most runs,"
    )
    key = profile_key()
    assert widget(at.main.selectbox, "Machine").value == key
    assert at.code[0].value.startswith(f"memplan evaluate --workload alexnet --machine {key}")
    assert widget(at.button_group, "Models").value == ["paper", "refined"]
    chart = peak_chart(at)
    measured = chart["measured"]["rows"]
    assert len(measured) == len(ok)
    assert set(measured["image"]) == {str(side) for side in ALEXNET_SIDES} | {"227x200"}
    curves = chart["predicted"]["rows"]
    assert set(curves["model"]) == {"paper", "refined"}
    assert set(curves["batch_size"]) == set(ALEXNET_BATCHES)
    assert curves["side"].min() == 67 and curves["side"].max() == max(ALEXNET_SIDES)
    assert chart["predicted"]["encoding"]["x"]["title"] == (
        "image side (pixels; square root of H x W)"
    )
    # Analytical models are not fit to peaks: every run is out of sample for them.
    held_out = layers(charts(at)[1])["held_out"]["rows"]
    assert len(held_out) == 2 * len(ok)
    assert not at.latex


def test_alexnet_with_its_own_evaluation_shows_its_models_scores_and_held_out_points(
    shared_alexnet_db: Path,
) -> None:
    at = alexnet_page()

    assert not other_infos(at)
    stored = results.load_predictors(read_db(shared_alexnet_db, "alexnet"))
    assert widget(at.button_group, "Models").options == [p.title for p in stored]
    assert widget(at.button_group, "Models").value == ["paper", "refined", "symbolic"]
    chart = peak_chart(at)
    assert len(chart["measured"]["rows"]) == len(ok_alexnet_runs(shared_alexnet_db))
    assert set(chart["predicted"]["rows"]["model"]) == {"paper", "refined", "symbolic"}
    held_out = layers(charts(at)[1])["held_out"]["rows"]
    predictions = results.load_predictions(read_db(shared_alexnet_db, "alexnet"))
    shown_models = predictions["model"].isin(["paper", "refined", "symbolic"])
    assert len(held_out) == len(predictions[(predictions["split"] == "random") & shown_models])
    errors = at.table[0].value
    assert len(errors) == len(stored)
    captions = " ".join(caption.value for caption in at.caption)
    # The formula's inputs, in the AlexNet's words (H x W), never the U-Net's (D x H x W).
    (symbolic,) = [model for model in stored if model.name == "symbolic"]
    said = formulas.inputs_caption([symbolic.formula or ""], "alexnet")
    assert f"inputs: {said};" in captions and "D x H x W" not in said
    assert "AlexNet-style 2D CNN (Torres et al. 2021), float32" in captions


def test_the_u_net_view_is_unchanged_by_alexnet_runs_beside_it(shared_alexnet_db: Path) -> None:
    at = models_page()
    assert widget(at.main.selectbox, "Workload").value == "unet3d"
    assert len(peak_chart(at)["measured"]["rows"]) == REFERENCE_OK_RUNS
    assert widget(at.button_group, "Models").options == [
        p.title for p in results.load_predictors(read_db(shared_alexnet_db))
    ]


# --- machine profiles ---------------------------------------------------------------------


def test_the_page_opens_on_the_bundled_machine_and_says_why_not_this_one(shared_reference_db: Path):
    at = models_page()

    machine = widget(at.main.selectbox, "Machine")
    here = this_profile()
    bundled = choose_machine(shared_reference_db, "unet3d")
    assert machine.value == bundled.key
    assert machine.options == [
        bundled.label,  # by name; the key is in the caption below
        f"{here.label} — this machine",
    ]
    captions = [shown(caption.value) for caption in at.caption]
    assert f"Profile `{bundled.key}` · the bundled reference" in captions
    (note,) = machine_note(at)
    assert note == shown(bundled.note)
    assert "memplan calibrate --workload unet3d" in note
    assert dict(at.query_params) == {"workload": "unet3d", "machine": bundled.key}


def test_this_machine_without_runs_says_what_it_lacks_and_launches_the_sweep(
    shared_reference_db: Path, monkeypatch: pytest.MonkeyPatch
):
    launched = []
    monkeypatch.setattr(
        sweep_job, "launch", lambda db, request, refit=None: launched.append((request, refit))
    )
    at = models_page()
    here = this_profile()
    widget(at.main.selectbox, "Machine").set_value(here.key).run()

    assert not at.exception
    assert at.query_params["machine"] == here.key
    # Nothing of the bundled machine is drawn: no measured point, only the analytical models.
    assert peak_chart(at)["measured"]["rows"].empty
    assert widget(at.button_group, "Models").value == ["paper", "refined"]
    assert not machine_note(at)
    (lacks,) = [shown(w.value) for w in at.warning]
    assert lacks.startswith(
        f"{here.label} (profile {here.key}) has no measured run of the 3D U-Net (IntelAI/unet), "
        "so no models of its own: a fit needs at least 10 distinct measured configurations. "
        f"The smallest sweep that fixes it measures {CALIBRATION.points} new point(s)"
    )
    assert at.code[0].value == f"{CALIBRATION_SWEEP} --db {shared_reference_db}"

    widget(at.main.button, "Launch this sweep").click().run()
    [(request, refit)] = launched
    assert [shape[0] for shape in request.grid.image_sizes] == list(CALIBRATION.image_sizes)
    assert tuple(request.grid.batch_sizes) == CALIBRATION.batch_sizes
    # Then this machine's models are fitted the way `memplan calibrate` fits them.
    assert refit == fit_job("unet3d", here.key, shared_reference_db)


def test_another_machines_runs_are_drawn_alone_and_must_be_measured_there(alexnet_db: Path):
    store.insert_runs(
        alexnet_db,
        [
            alexnet_record(side, side, batch, **OTHER_MACHINE)
            for side in ALEXNET_SIDES[:2]
            for batch in ALEXNET_BATCHES[:2]
        ],
    )
    other = profile_key(**OTHER_MACHINE)
    at = alexnet_page()
    assert len(widget(at.main.selectbox, "Machine").options) == 3  # two with runs, and here
    widget(at.main.selectbox, "Machine").set_value(other).run()

    assert len(peak_chart(at)["measured"]["rows"]) == 4  # its own runs only
    assert widget(at.button_group, "Models").value == ["paper", "refined"]
    (lacks,) = [shown(w.value) for w in at.warning]
    assert lacks.startswith(
        f"AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16, oneDNN off (profile {other}) has 4 "
        "distinct measured configuration(s) of the AlexNet-style 2D CNN (Torres et al. 2021); "
        "a fit needs at least 10, so 6 more are missing."
    )
    assert "must be measured on that machine (AMD EPYC 7B13" in lacks
    # Its runs had oneDNN off: the page says what the variable would change.
    assert [c for c in at.caption if shown(c.value) == profiles.ONEDNN_OFF_NOTE]
    assert at.code[0].value == (
        "memplan sweep --workload alexnet --image-sizes 96 128 160 192 224 --batch-sizes 1 2"
    )
    assert not at.main.button  # not this machine: nothing to launch here

    widget(at.main.selectbox, "Machine").set_value(profile_key()).run()
    assert len(peak_chart(at)["measured"]["rows"]) == len(ok_alexnet_runs(alexnet_db)) - 4
    assert "symbolic" in widget(at.button_group, "Models").value


def test_a_link_opens_the_machine_it_names(shared_alexnet_db: Path):
    key = profile_key()
    at = open_page(PAGE, workload="alexnet", machine=key[:4])

    assert widget(at.main.selectbox, "Workload").value == "alexnet"
    assert widget(at.main.selectbox, "Machine").value == key
    assert at.query_params["machine"] == key

    at = open_page(PAGE, workload="alexnet", machine="<b>nope</b>")
    (warning,) = [shown(w.value) for w in at.warning if "ignored" in w.value]
    assert warning.startswith("The link's machine='<b>nope</b>' was ignored")
