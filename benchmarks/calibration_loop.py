"""`memplan calibrate`'s point-by-point loop replayed against a measured grid (the oracle).

    python -m benchmarks.calibration_loop --oracle ORACLE.duckdb [--db-template FILE]

A fresh database holding the bundled runs, less every run of the oracle's profile
(that machine is held out, whichever bundled export brought its runs; another profile's
runs in the oracle's export stay, as in a user's database) (and, read from the bundles,
their models)
calibrates the oracle's machine profile: wherever the loop would measure a point, the
oracle's ok runs of that configuration are copied in instead of running one
(`application.calibration_loop.run_loop` with that as its ``measure``). Prints each
chosen point and why, the points used, the rule that stopped it, the measured wall
minutes those points took on the oracle's machine, and the MAPE and bound coverage
of the stored calibrated model over every ok configuration of the oracle (the median
peak of its repeats); where the oracle measured knob values the points did not (its
mixed_bfloat16 runs after a float32 calibration), the coverage of the bound
`memplan size` gives them: widened by the stored knob splits of the calibrated
model's prior (`modeling.unmeasured`). Copies, never writes to, the oracle.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np

from application import stored, widening
from application.calibration_loop import LoopPlan, measured_points, run_loop
from core import database, profiles, store, workloads
from modeling.closed_form_floor import replace_below_floor
from profiling import exchange

WORKLOAD = "unet3d"


def _template(path: Path) -> Path:
    if not path.exists():
        database.ensure_database(path)
        for runs_file, samples_file in database.BUNDLED_EXPORTS:
            exchange.import_runs(path, runs_file, samples_file)
    return path


def _copy_point(
    oracle: Path, db: Path, side: int, batch: int, steps: int, run_ids: list[str]
) -> None:
    """The oracle's ok runs of this point among ``run_ids`` (its profile's) into ``db``."""
    with database.transaction(db) as con:
        con.execute(f"ATTACH '{oracle}' AS oracle (READ_ONLY)")
        try:
            before = con.execute("SELECT count(*) FROM runs").fetchone()[0]
            con.execute(
                "INSERT INTO runs SELECT * FROM oracle.runs WHERE status = 'ok' AND depth = ?"
                " AND height = ? AND width = ? AND batch_size = ? AND steps = ?"
                " AND run_id IN (SELECT unnest(?))",
                [side, side, side, batch, steps, run_ids],
            )
            if con.execute("SELECT count(*) FROM runs").fetchone()[0] == before:
                print("    (the oracle has no ok run there: the loop moves on)")
        finally:
            con.execute("DETACH oracle")


def _grid(oracle: Path, key: str) -> tuple[list, np.ndarray, np.ndarray]:
    """Every configuration the oracle measured ok on profile ``key``, its median peak and
    median wall seconds."""
    runs = profiles.with_keys(
        store.load_runs(oracle, store.RunFilter(status="ok", workload=WORKLOAD))
    )
    runs = runs[runs[profiles.KEY_COLUMN] == key]
    configs = [workloads.config_from_row(row) for row in runs.to_dict("records")]
    runs = runs.assign(config=configs)
    peaks = runs.groupby("config", sort=False)["peak_hwm_bytes"].median()
    walls = runs.groupby("config", sort=False)["wall_s"].median()
    return list(peaks.index), peaks.to_numpy(dtype=float), walls[peaks.index].to_numpy(float)


def _oracle_db(oracle: Path, scratch: Path) -> Path:
    """The oracle as a database of its own (an export is imported)."""
    copy = scratch / "oracle.duckdb"
    if oracle.suffix == ".parquet":
        database.ensure_database(copy)
        exchange.import_runs(copy, oracle)
    else:
        shutil.copy(oracle, copy)
    return copy


def _hold_out(db: Path, key: str) -> None:
    """Every run of profile ``key`` leaves ``db``, whichever export brought it, and no other:
    a bundled export can hold another profile's runs (the oneDNN-on knob set holds the
    oneDNN-off profile's mixed precisions), whose evaluation, with its knob splits, must stay
    as a user's database has it."""
    runs = profiles.with_keys(store.load_runs(db))
    ids = runs.loc[runs[profiles.KEY_COLUMN] == key, "run_id"].tolist()
    with database.transaction(db) as con:
        con.execute("DELETE FROM samples WHERE run_id IN (SELECT unnest(?))", [ids])
        con.execute("DELETE FROM runs WHERE run_id IN (SELECT unnest(?))", [ids])


def _own_fit(plan: LoopPlan, configs: list, peaks: np.ndarray) -> None:
    """The alternative: least squares on the analytical terms fitted on the same points
    alone (what `memplan evaluate` would fit, had it the 10 configurations it needs)."""
    from modeling.estimators.baselines import AnalyticalLeastSquares
    from modeling.features import TARGET_COLUMN, config_frame

    frame = measured_points(plan)
    try:
        model = AnalyticalLeastSquares().fit(frame, frame[TARGET_COLUMN])
    except ValueError as error:
        print(f"least squares on the same points alone: not fitted ({error})")
        return
    cache = frame["l3_cache_bytes"].dropna() if "l3_cache_bytes" in frame else []
    grid = config_frame(configs, int(cache.iloc[0]) if len(cache) else None)
    errors = np.abs(model.predict(grid) - peaks) / peaks * 100
    print(
        f"least squares on the same {len(frame)} points alone: MAPE {errors.mean():.2f}% "
        f"(max {errors.max():.1f}%)"
    )


def _scores(name: str, predicted: np.ndarray, peaks: np.ndarray, default: np.ndarray) -> str:
    errors = np.abs(predicted - peaks) / peaks * 100
    return (
        f"{name}: MAPE {errors.mean():.2f}% (max {errors.max():.1f}%) over all "
        f"{len(peaks)} configurations; {errors[default].mean():.2f}% over the "
        f"{int(default.sum())} of the default network"
    )


def _report(plan: LoopPlan, outcome, oracle: Path) -> None:
    """Points used, their minutes on the oracle's machine, and the MAPE over its grid."""
    prior = outcome.prior
    print(f"prior: {prior.key} ({prior.label}), model {prior.predictor.name}")
    print(f"stopped: {outcome.stopped}")
    configs, peaks, walls = _grid(oracle, plan.here.key)
    chosen = {(s, b) for s, b, _ in outcome.points}
    default = np.array([c == plan.config(c.image_shape[0], c.batch_size) for c in configs])
    picked = [(c.image_shape[0], c.batch_size) in chosen for c in configs] & default
    used = ", ".join(f"{s}^3 b{b}" for s, b, _ in outcome.points)
    print(f"points used: {len(outcome.points)}: {used}")
    print(
        f"measured minutes of those points on the oracle's machine: {walls[picked].sum() / 60:.1f}"
    )
    print(f"held-out (leave-one-out) MAPE: {outcome.loo_mape_pct:.2f}%")
    predictor = stored.load_predictor(plan.db_path, workload=WORKLOAD, machine=plan.here.key)
    covered = peaks <= predictor.upper_bytes(configs)
    # A knob value the calibration points never measured is widened by the knob splits where
    # an answer is given (`application.sizing.models_of`); the raw bound here is not.
    print(
        _scores("calibrated", predictor.point_bytes(configs), peaks, default)
        + f"; bound covers {covered.mean():.0%} ({covered[default].mean():.0%} of the default "
        "network's, the network the points measured)"
    )
    print(_scores("the prior alone", prior.predictor.point_bytes(configs), peaks, default))
    _unmeasured_answers(plan, predictor, configs, peaks)
    _own_fit(plan, configs, peaks)


def _unmeasured_answers(plan: LoopPlan, predictor, configs: list, peaks: np.ndarray) -> None:
    """The coverage of the bounds `memplan size` gives the oracle's configurations whose knob
    values the points never measured (the stored knob splits widening them), by precision."""
    read = stored.read(plan.db_path, WORKLOAD)
    [answering] = widening.with_stored_knob_evidence([predictor], read)
    unmeasured = np.array([bool(answering.training_range.unmeasured(c)) for c in configs])
    if not unmeasured.any():
        return
    bounds, _ = replace_below_floor(answering, configs, answering.upper_bytes(configs))
    covered = peaks <= bounds
    said = f"answers for the {int(unmeasured.sum())} configurations of knob values the points "
    said += f"never measured: bound covers {covered[unmeasured].mean():.0%}"
    evidence = answering.training_range.knob_evidence
    measured = answering.training_range.knobs.get("precision", ())
    for precision in sorted({c.precision for c, u in zip(configs, unmeasured, strict=True) if u}):
        these = unmeasured & np.array([c.precision == precision for c in configs])
        why = "measured" if precision in measured or evidence is None else ""
        why = why or evidence.widening("precision", precision).words
        closest = float(np.min(bounds[these] / peaks[these]))
        said += f"; {precision}: {covered[these].mean():.0%} of {int(these.sum())} "
        said += f"(the bound at least {closest:.3f}x the peak; {why})"
    print(said)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--oracle",
        type=Path,
        required=True,
        help="a database or a runs export (.parquet) of one profile: a bundled one is held out",
    )
    parser.add_argument("--db-template", type=Path, default=None)
    parser.add_argument("--memory-limit-gib", type=float, default=19.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        template = _template(args.db_template or Path(scratch) / "template.duckdb")
        db = Path(scratch) / "calib.duckdb"
        shutil.copy(template, db)
        oracle = _oracle_db(args.oracle, Path(scratch))
        ok = profiles.with_keys(
            store.load_runs(oracle, store.RunFilter(status="ok", workload=WORKLOAD))
        )
        here = profiles.profiles_in(ok)[str(ok[profiles.KEY_COLUMN].mode().iloc[0])]
        _hold_out(db, here.key)
        run_ids = ok.loc[ok[profiles.KEY_COLUMN] == here.key, "run_id"].tolist()
        steps = int(ok["steps"].mode().iloc[0])
        limit = int(args.memory_limit_gib * 2**30)
        plan = LoopPlan(db, WORKLOAD, here, steps, limit, "benchmarks.calibration_loop")
        print(f"oracle profile: {here.key} ({here.label}); steps {steps}")
        outcome = run_loop(
            plan,
            lambda side, batch: _copy_point(oracle, db, side, batch, steps, run_ids),
            lambda step: print("  " + step.sentence(), flush=True),
        )
        _report(plan, outcome, oracle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
