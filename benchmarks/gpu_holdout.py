"""The bundled GPU answers against runs they never saw: memplan's own GPU child's runs.

    python -m benchmarks.gpu_holdout FOLDER [FOLDER ...] [--runs FILE.jsonl]

The model is the one the answers use (`application.gpu_models`), fitted to the bundled
H200 runs (``--runs``: another file of GPU lines), which the outside script measured,
each group of configurations in one process. The held-out runs are the record folders
memplan's own GPU sweep wrote (``scripts/gpu_sweep.sh``; data/gpu/memplan-h200-*), each
configuration in a fresh process. Per configuration (the first record of a repeat): the
allocated line against the measured peak, the floor and the bound against what the
device had in use, and the answer's verdict, by the same `check` the CLI, the Sizing
page and the report use, on three GPUs:

* the H200 the run was measured on: an ``ok`` run must not be "does not fit", an
  ``oom`` run must not be "fits";
* a GPU of exactly the run's device-used peak (it trained in that much): not "does not
  fit", or the floor is unsound;
* a GPU one MiB under it: "fits" there is said without evidence (the bound missed).

Then `modeling.gpu_evaluation.held_out`'s scores, as ``benchmarks.gpu_accuracy`` prints
them. Prints the machine and the command; stores nothing.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd

from application import gpu_models
from application.gpu_sizing import GpuProfileModel, Verdict, check
from benchmarks.gpu_accuracy import HEADER, score_row
from core import bundled_gpu, datafiles, workloads
from core.gpu_cards import card_for, usable_card
from core.machine import machine_info
from core.units import format_gib
from modeling import gpu_evaluation
from profiling.folder_compare import config_label

MIB = 2**20
# The verdicts each check may not give (see the docstring).
WRONG_ON_ITS_GPU = {"ok": Verdict.DOES_NOT_FIT, "oom": Verdict.FITS}


def held_out_runs(folders: list[Path]) -> pd.DataFrame:
    """The runs of record folders, fully checked as `memplan import FOLDER` checks them."""
    return pd.concat(
        [datafiles.read_record_folder(folder)[0].to_pandas() for folder in folders],
        ignore_index=True,
    )


def first_of_each(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Each configuration's first ``ok``/``oom`` run, and a line per repeat saying how its
    peaks compare with the first's."""
    kept: dict[str, pd.Series] = {}
    repeats = []
    for _, run in runs[runs["status"].isin(("ok", "oom"))].iterrows():
        config = workloads.config_from_row(run)
        key = repr(config)
        if key not in kept:
            kept[key] = run
            continue
        first = kept[key]
        figures = ", ".join(
            f"{name} {format_gib(run[column])} / {format_gib(first[column])}"
            for name, column in (
                ("allocated", "allocated_peak_bytes"),
                ("reserved", "reserved_peak_bytes"),
                ("device used", "nvml_used_peak_bytes"),
            )
        )
        repeats.append(f"- {config_label(config)} measured again: {figures} (again / first)")
    return pd.DataFrame(list(kept.values())).reset_index(drop=True), repeats


def rows(model: GpuProfileModel, runs: pd.DataFrame) -> tuple[list[str], dict[str, int]]:
    """The table's rows and the count of each kind of wrong or unsupported verdict."""
    its_gpu = card_for("141GB")
    wrong = {"on its GPU": 0, "at what it used": 0, "fits under what it used": 0}
    lines = [
        "| configuration | run | allocated: measured / line | device used | floor | bound | "
        "bound / used | on the H200 | at its device used | 1 MiB under it |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, run in runs.iterrows():
        config = workloads.config_from_row(run)
        used = int(run["nvml_used_peak_bytes"])
        cards = (its_gpu, usable_card(used), usable_card(used - MIB))
        checks = [
            check(model, config, card, gpu_models.transfer_of(model, card, run["alloc_conf"]))
            for card in cards
        ]
        on_its, at_used, under = (c.verdict for c in checks)
        wrong["on its GPU"] += on_its == WRONG_ON_ITS_GPU[run["status"]]
        if run["status"] == "ok":
            wrong["at what it used"] += at_used == Verdict.DOES_NOT_FIT
            wrong["fits under what it used"] += under == Verdict.FITS
        need = checks[0]
        figures = (
            ["no line"] * 4
            if need.bound_bytes is None
            else [
                f"{format_gib(run['allocated_peak_bytes'])} / {format_gib(need.allocated_bytes)}",
                format_gib(used),
                format_gib(need.floor_bytes),
                format_gib(need.bound_bytes),
            ]
        )
        room = "" if need.bound_bytes is None else f"x{need.bound_bytes / used:.3f}"
        verdicts = [c.verdict.value for c in checks]
        if run["status"] == "oom":
            verdicts[1:] = ["-", "-"]  # it did not train: no device used to size a GPU by
        lines.append(
            f"| {config_label(config)} | {run['status']} | {' | '.join(figures[:1])} | "
            f"{' | '.join(figures[1:])} | {room} | {' | '.join(verdicts)} |"
        )
    return lines, wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, metavar="FOLDER")
    parser.add_argument("--runs", type=Path, default=None, help="the GPU lines to fit instead")
    args = parser.parse_args(argv)
    path, alloc_conf = bundled_gpu.BUNDLED_GPU_RUNS[0]
    bundled = datafiles.read_gpu_runs(args.runs or path, default_alloc_conf=alloc_conf)
    train = bundled.to_pandas()
    (model,) = gpu_models.gpu_models_of(train).values()
    test, repeats = first_of_each(held_out_runs(args.folders))
    info = machine_info()
    print(f"`python -m benchmarks.gpu_holdout {shlex.join(sys.argv[1:])}`")
    print(f"on {info.get('cpu_model', 'this machine')}, {info.get('cpu_cores', '?')} cores.\n")
    print(
        f"Model: GPU profile {model.key} ({model.profile.machine_label}), "
        f"{model.run_count} runs. Held out: {len(test)} configurations.\n"
    )
    lines, wrong = rows(model, test)
    print("\n".join(lines) + "\n")
    print("\n".join(repeats) + ("\n" if repeats else ""))
    print(HEADER)
    print("|---|---|---|---|---|---|---|")
    print(score_row(gpu_evaluation.held_out(train, test)))
    print()
    print("Verdicts without evidence: " + "; ".join(f"{k}: {v}" for k, v in wrong.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
