"""`memplan calibrate`'s point-by-point loop replayed against a measured grid (the oracle).

    python -m benchmarks.calibration_loop --oracle ORACLE.duckdb [--db-template FILE]

A fresh database holding the bundled runs (and, read from the bundles, their models)
calibrates the oracle's machine profile: wherever the loop would measure a point, the
oracle's ok runs of that configuration are copied in instead of running one
(`application.calibration_loop.run_loop` with that as its ``measure``). Prints each
chosen point and why, the points used, the rule that stopped it, the measured wall
minutes those points took on the oracle's machine, and the MAPE and bound coverage
of the stored calibrated model over every ok configuration of the oracle (the median
peak of its repeats). Copies, never writes to, the oracle.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np

from application.calibration_loop import LoopPlan, run_loop
from core import database, profiles, store, workloads
from modeling.stored import bundle
from profiling import exchange

WORKLOAD = "unet3d"


def _template(path: Path) -> Path:
    if not path.exists():
        database.ensure_database(path)
        for runs_file, samples_file in database.BUNDLED_EXPORTS:
            exchange.import_runs(path, runs_file, samples_file)
    return path


def _copy_point(oracle: Path, db: Path, side: int, batch: int, steps: int) -> None:
    with database.transaction(db) as con:
        con.execute(f"ATTACH '{oracle}' AS oracle (READ_ONLY)")
        try:
            con.execute(
                "INSERT INTO runs SELECT * FROM oracle.runs WHERE status = 'ok' AND depth = ?"
                " AND height = ? AND width = ? AND batch_size = ? AND steps = ?",
                [side, side, side, batch, steps],
            )
        finally:
            con.execute("DETACH oracle")


def _grid(oracle: Path, key: str) -> tuple[list, np.ndarray, np.ndarray]:
    runs = profiles.with_keys(store.load_runs(oracle, status="ok", workload=WORKLOAD))
    runs = runs[runs[profiles.KEY_COLUMN] == key]
    peaks = runs.groupby(["depth", "height", "width", "batch_size"])["peak_hwm_bytes"].median()
    walls = runs.groupby(["depth", "height", "width", "batch_size"])["wall_s"].median()
    config = workloads.get(WORKLOAD).Config
    configs = [config((d, h, w), b) for d, h, w, b in peaks.index]
    return configs, peaks.to_numpy(dtype=float), walls.to_numpy(dtype=float)


def _own_fit(db: Path, key: str, configs: list, peaks: np.ndarray) -> None:
    """The alternative: least squares on the analytical terms fitted on the same points
    alone (what `memplan evaluate` would fit, had it the 10 configurations it needs)."""
    from modeling.estimators.baselines import AnalyticalLeastSquares
    from modeling.features import TARGET_COLUMN, config_frame, measured_frame

    frame = measured_frame(store.load_runs(db, status="ok", workload=WORKLOAD, machine=key))
    try:
        model = AnalyticalLeastSquares().fit(frame, frame[TARGET_COLUMN])
    except ValueError as error:
        print(f"least squares on the same points alone: not fitted ({error})")
        return
    cache = frame["l3_cache_bytes"].dropna() if "l3_cache_bytes" in frame else []
    grid = config_frame(configs, int(cache.iloc[0]) if len(cache) else None)
    errors = np.abs(model.predict(grid) - peaks) / peaks * 100
    print(
        f"least squares on the same {len(frame)} runs alone: MAPE {errors.mean():.2f}% "
        f"(max {errors.max():.1f}%)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=Path, required=True)
    parser.add_argument("--db-template", type=Path, default=None)
    parser.add_argument("--memory-limit-gib", type=float, default=19.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        oracle = Path(scratch) / "oracle.duckdb"
        shutil.copy(args.oracle, oracle)
        template = _template(args.db_template or Path(scratch) / "template.duckdb")
        db = Path(scratch) / "calib.duckdb"
        shutil.copy(template, db)
        ok = profiles.with_keys(store.load_runs(oracle, status="ok", workload=WORKLOAD))
        here = profiles.profiles_in(ok)[str(ok[profiles.KEY_COLUMN].mode().iloc[0])]
        steps = int(ok["steps"].mode().iloc[0])
        limit = int(args.memory_limit_gib * 2**30)
        plan = LoopPlan(db, WORKLOAD, here, steps, limit, "benchmarks.calibration_loop")
        print(f"oracle profile: {here.key} ({here.label}); steps {steps}")
        outcome = run_loop(
            plan,
            lambda side, batch: _copy_point(oracle, db, side, batch, steps),
            lambda step: print("  " + step.sentence(), flush=True),
        )
        print(
            f"prior: {outcome.prior.key} ({outcome.prior.label}), model "
            f"{outcome.prior.predictor.name}, widening x{outcome.prior.widening:.3f}"
        )
        print(f"stopped: {outcome.stopped}")
        configs, peaks, walls = _grid(oracle, here.key)
        chosen = {(s, b) for s, b, _ in outcome.points}
        minutes = (
            sum(
                w
                for c, w in zip(configs, walls, strict=True)
                if (c.image_shape[0], c.batch_size) in chosen
            )
            / 60
        )
        predictor = bundle.load_predictor(db, workload=WORKLOAD, machine=here.key)
        predicted = predictor.point_bytes(configs)
        upper = predictor.upper_bytes(configs)
        errors = np.abs(predicted - peaks) / peaks * 100
        print(
            f"points used: {len(outcome.points)}: "
            + ", ".join(f"{s}^3 b{b}" for s, b, _ in outcome.points)
        )
        print(f"measured minutes of those points on the oracle's machine: {minutes:.1f}")
        print(f"held-out (leave-one-out) MAPE: {outcome.loo_mape_pct}")
        print(
            f"MAPE over the oracle's {len(configs)} configurations: {errors.mean():.2f}% "
            f"(max {errors.max():.1f}%); bound covers {np.mean(peaks <= upper):.0%}"
        )
        _own_fit(db, here.key, configs, peaks)
        prior = outcome.prior.predictor.point_bytes(configs)
        prior_errors = np.abs(prior - peaks) / peaks * 100
        print(
            f"the prior alone, uncalibrated: MAPE {prior_errors.mean():.2f}% "
            f"(max {prior_errors.max():.1f}%)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
