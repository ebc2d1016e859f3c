"""Host-to-host spread of each bundled profile: the kept runs of other hosts against its bounds.

    python -m benchmarks.host_spread [--db FILE] [--workload unet3d] > table.md

For each profile with fitted models of the workload, the runs kept in ``data/hosts/``
(`modeling.host_spread.kept_runs`) that repeat a configuration the profile measured:
the hosts and configurations, each kept peak over the profile's own median peak of that
configuration (the spread itself), and for each stored model the kept peak over its
prediction and over its bound, the share of configurations its bound covers as stored
(counted by configuration: covered when every kept run of it is at or under the bound),
and the factor `memplan size` widens that bound by (`HostSpread.factor`), after which
it covers them all. Profiles no kept run repeats are listed as unmeasured. Stores
nothing; fits nothing (the stored or bundled models answer), seconds.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from core import database, profiles, snapshot
from core.machine import machine_info
from modeling import host_spread
from modeling.host_spread import HostSpread
from modeling.machines import fitted_machines
from modeling.stored import bundle
from modeling.stored.tables import best_model_name
from presentation.report import markdown_table


def covered_share(spread: HostSpread, ratios: np.ndarray) -> float:
    """The share of ``spread``'s configurations whose every kept run is at or under the bound
    (``ratios``: each kept run's peak over its bound, in ``spread.peaks``' order)."""
    worst: dict[object, float] = {}
    for peak, ratio in zip(spread.peaks, ratios, strict=True):
        worst[peak.config] = max(worst.get(peak.config, 0.0), float(ratio))
    return float(np.mean([ratio <= 1 for ratio in worst.values()]))


def model_rows(db: Path, workload: str, spread: HostSpread) -> list[dict[str, object]]:
    """One row per stored model of ``spread``'s profile; the default model marked."""
    read = snapshot.read(db, workload)
    default = best_model_name(bundle.load_scores(read, spread.profile))
    configs = [peak.config for peak in spread.peaks]
    kept = np.array([peak.peak_bytes for peak in spread.peaks], dtype=float)
    rows = []
    for model in bundle.load_predictors(read, spread.profile):
        ratios = spread.bound_ratios(model)
        rows.append(
            {
                "profile": spread.profile,
                "model": model.name + (" (default)" if model.name == default else ""),
                "kept / predicted, max": float((kept / model.point_bytes(configs)).max()),
                "kept / bound, max": float(ratios.max()),
                "bound covers %": covered_share(spread, ratios) * 100,
                "factor": spread.factor(model),
            }
        )
    return rows


def profile_line(key: str, label: str, spread: HostSpread | None) -> str:
    """One profile in words: its kept hosts and the spread of their peaks, or unmeasured."""
    if spread is None:
        return f"- **{key}** ({label}): {host_spread.UNMEASURED}."
    ratios = spread.measured_ratios
    return (
        f"- **{key}** ({label}): {len(spread.peaks)} kept run(s) of {spread.configurations} "
        f"configuration(s) on {len(spread.hosts)} other host(s) ({', '.join(spread.hosts)}); "
        f"kept peak / the profile's median peak {ratios.min():.3f}-{ratios.max():.3f}."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.host_spread", description=__doc__)
    parser.add_argument(
        "--db", type=Path, help="a database (default: a fresh one of the bundled runs)"
    )
    parser.add_argument("--workload", default="unet3d")
    args = parser.parse_args(argv)
    lines, rows = [], []
    with tempfile.TemporaryDirectory() as scratch:
        db = args.db or database.ensure_database(Path(scratch) / "bundled.duckdb", seed_new=True)
        read = snapshot.read(db, args.workload)
        runs = profiles.with_keys(read.ok_runs())
        known = profiles.profiles_in(runs)
        for key in [key for key in fitted_machines(read) if key in known]:
            spread = host_spread.spread_of(runs, key, known[key], args.workload)
            lines.append(profile_line(key, known[key].label, spread))
            rows += model_rows(db, args.workload, spread) if spread is not None else []
    facts = machine_info()
    command = shlex.join(["python", "-m", "benchmarks.host_spread", *(argv or sys.argv[1:])])
    print("# Host-to-host spread: kept runs of other hosts against each profile's bounds\n")
    print(
        f"Command: `{command}`; computed on {facts['cpu_model']} ({facts['cpu_cores']} CPUs); "
        "the kept runs are data/hosts/*_runs.parquet (data/hosts/README.md).\n"
    )
    print("\n".join(lines))
    if rows:
        print()
        print(markdown_table(pd.DataFrame(rows), decimals=3))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
