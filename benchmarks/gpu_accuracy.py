"""How well the GPU memory model predicts runs it was not fitted to: the GPU twin of
``benchmarks.accuracy``, as Markdown.

    python -m benchmarks.gpu_accuracy [--runs FILE.jsonl | --db FILE] [--splits 20]

For each GPU profile (by default the bundled H200 runs, read as ``memplan import``
reads them; ``--db``: a database's GPU runs): `modeling.gpu_evaluation`'s random split
(a quarter of each network's runs held out, ``--splits`` seeded times) and beyond the
measured sides (each network's largest quarter held out), each with the allocated
line's error, the bound's coverage of what the device had in use (overall and inside
the measured range, where an answer says "fits"), the floor's soundness and the room
the bound leaves. Prints the machine and the command; stores nothing.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd

from core import bundled_gpu, datafiles, profiles, store, targets
from core.machine import machine_info
from modeling import gpu_evaluation
from modeling.gpu_evaluation import GpuScores
from modeling.gpu_memory import GpuMemoryModel

HEADER = (
    "| protocol | held-out predictions (inside) | allocated error: median / p90 / max | "
    "bound coverage: all / inside | floor sound: all / inside | bound / device used, median "
    "| farthest beyond |"
)


def score_row(scores: GpuScores) -> str:
    return (
        f"| {scores.protocol} | {scores.predictions} ({scores.inside_predictions}) | "
        f"{scores.median_error_pct:.1f}% / {scores.p90_error_pct:.1f}% / "
        f"{scores.max_error_pct:.1f}% | {scores.bound_coverage:.1%} / "
        f"{scores.inside_bound_coverage:.1%} | {scores.floor_soundness:.1%} / "
        f"{scores.inside_floor_soundness:.1%} | x{scores.median_bound_room:.2f} | "
        f"x{scores.max_beyond_factor:.1f} |"
    )


def line_rows(runs: pd.DataFrame) -> list[str]:
    """Each network's fitted line on all runs: slope, intercept, ratios."""
    model = GpuMemoryModel().fit(runs)
    assert model.lines_ is not None
    rows = [
        "| network | runs | fixed (GiB) | bytes per element | reserved / allocated, max | "
        "device used line's left-out high ratio | context + workspaces (GiB) |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, line in model.lines_.items():
        knobs = dict(key[1:])
        rows.append(
            f"| {key[0]} {knobs['precision']} | {line.run_count} | "
            f"{line.fixed_bytes / 2**30:.3f} | {line.bytes_per_element:,.1f} | "
            f"{line.reserved_ratio:.3f} | {line.used_high_ratio:.3f} | "
            f"{line.overhead_bytes / 2**30:.3f} |"
        )
    return rows


def _runs(args: argparse.Namespace) -> pd.DataFrame:
    if args.db is not None:
        return store.load_runs(args.db, store.RunFilter(target=targets.GPU_MEMORY))
    path, alloc_conf = bundled_gpu.BUNDLED_GPU_RUNS[0]
    runs = args.runs or path
    return datafiles.read_gpu_runs(runs, default_alloc_conf=alloc_conf).to_pandas()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=None, help="a .jsonl of GPU runs")
    parser.add_argument("--db", type=Path, default=None, help="a database's GPU runs instead")
    parser.add_argument("--splits", type=int, default=gpu_evaluation.DEFAULT_SPLITS)
    args = parser.parse_args(argv)
    runs = profiles.with_keys(_runs(args))
    info = machine_info()
    print(f"`python -m benchmarks.gpu_accuracy {shlex.join(sys.argv[1:])}`".replace(" `", "`"))
    print(f"on {info.get('cpu_model', 'this machine')}, {info.get('cpu_cores', '?')} cores.\n")
    for key, profile in profiles.profiles_in(runs).items():
        own = runs[runs[profiles.KEY_COLUMN] == key].drop(columns=[profiles.KEY_COLUMN])
        print(f"### GPU profile {key}: {profile.label}\n")
        print("\n".join(line_rows(own)) + "\n")
        print(HEADER)
        print("|---|---|---|---|---|---|---|")
        print(score_row(gpu_evaluation.random_split(own, splits=args.splits)))
        print(score_row(gpu_evaluation.beyond_sides(own)))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
