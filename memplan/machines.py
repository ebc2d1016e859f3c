"""``memplan machines``: the machine profiles of the stored runs, two compared (``--compare``),
or one machine's two frameworks compared (``--frameworks``)."""

from __future__ import annotations

import argparse

import pandas as pd

from application.machines import calibration_for, profile_table
from core import profiles, store, workloads
from core.machine import this_profile
from core.units import GIB
from core.workloads.base import PRECISIONS
from memplan import jsonout, options
from memplan.commands import add_db_option, open_db
from presentation import frameworks_compared, machines_compared
from presentation.report import markdown_table


def prepare(parser: argparse.ArgumentParser) -> None:
    options.add_workload_filter(parser)
    compare = parser.add_mutually_exclusive_group()
    compare.add_argument(
        "--compare",
        action="store_true",
        help="instead, every configuration measured on two or more profiles, side by side",
    )
    compare.add_argument(
        "--frameworks",
        action="store_true",
        help="instead, every configuration measured in both TensorFlow and PyTorch on one "
        "machine: both peaks and the PyTorch/TensorFlow ratio",
    )
    parser.add_argument(
        "--reference",
        help="with --compare: the profile the ratios are against (default: most runs)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--markdown", action="store_true", help="with --compare or --frameworks: Markdown"
    )
    options.add_json_option(group)
    add_db_option(parser)


def _compared(args: argparse.Namespace) -> pd.DataFrame:
    runs = store.load_runs(open_db(args), store.RunFilter(workload=args.workload))
    reference = None
    if args.reference:
        reference = profiles.resolve(args.reference, profiles.profiles_in(runs)).key
    return machines_compared.compared(runs, reference)


def _compare(args: argparse.Namespace) -> int:
    frame = _compared(args)
    if args.json:
        peaks = (frame.pop("peak_gib") * GIB).round()
        return jsonout.emit(jsonout.records(frame.assign(peak_bytes=peaks)))
    if frame.empty:
        print(
            "no configuration was measured on two machine profiles; "
            "`memplan calibrate` on another machine measures one"
        )
        return 0
    table = machines_compared.side_by_side(frame)
    print(markdown_table(table, decimals=3) if args.markdown else table.to_string(index=False))
    others = frame[~frame["reference"]]
    for machine, group in others.groupby("machine", sort=False):
        ratios = group["ratio"].dropna()
        print(
            f"\n{machine} over {frame.loc[frame['reference'], 'machine'].iloc[0]}: "
            f"{len(ratios)} configuration(s), ratio median {ratios.median():.3f}, "
            f"min {ratios.min():.3f}, max {ratios.max():.3f}"
        )
    print("\nPeak: median kernel high-water mark (GiB) of the ok runs on each profile.")
    return 0


def _frameworks(args: argparse.Namespace) -> int:
    """The configurations measured in both frameworks on one machine, and their ratios."""
    runs = store.load_runs(open_db(args), store.RunFilter(workload=args.workload))
    frame = frameworks_compared.compared(runs)
    if args.json:
        peaks = {
            f"{name}_peak_bytes": (frame.pop(f"{name}_peak_gib") * GIB).round()
            for name in ("tensorflow", "torch")
        }
        return jsonout.emit(jsonout.records(frame.assign(**peaks)))
    if frame.empty:
        print(
            "no configuration was measured in both TensorFlow and PyTorch on one machine; "
            "run a TensorFlow sweep's grid again with `memplan sweep ... --framework torch`"
        )
        return 0
    table = frameworks_compared.table(frame)
    print(markdown_table(table, decimals=3) if args.markdown else table.to_string(index=False))
    print()
    print("\n".join(frameworks_compared.summaries(frame)))
    print(
        "\nPeak: median kernel high-water mark (GiB) of the ok runs in each framework on "
        "the machine; PyTorch / TensorFlow: the PyTorch peak over the TensorFlow one."
    )
    return 0


def _as_json(table: pd.DataFrame, here: profiles.MachineProfile) -> int:
    rows = [
        {
            "profile": row["profile"],
            "machine": row["machine"],
            "workload": row["workload"],
            "runs": row["runs"],
            "ok_runs": row["ok"],
            "configurations": row["configurations"],
            "cpu_family_model_stepping": row["family/model/stepping"],
            "baseline_gib": row["baseline (GiB)"],
            "fitted": row["fitted"] == "yes",
            "this_machine": row["profile"] == here.key,
        }
        for row in table.to_dict("records")
    ]
    return jsonout.emit(
        {"this_machine": {"profile": here.key, "machine": here.label}, "profiles": rows}
    )


def run(args: argparse.Namespace) -> int:
    if args.compare:
        return _compare(args)
    if args.frameworks:
        return _frameworks(args)
    db_path = open_db(args)
    here = this_profile()
    table = profile_table(db_path, here.key, args.workload)
    if args.json:
        return _as_json(table, here)
    if table.empty:
        print("no runs match")
    else:
        print(table.to_string(index=False))
    if here.key not in set(table["profile"]):
        # Here, not at the top: modeling.evaluation.protocol loads scikit-learn (seconds).
        from application.machines import MIN_POINTS

        workload = args.workload or workloads.DEFAULT_WORKLOAD
        how = (
            f"`memplan calibrate --workload {workload}` measures the few it needs"
            if calibration_for(workload) is not None
            else f"measure at least {MIN_POINTS} configurations "
            f"(`memplan sweep --workload "
            f"{workload} ...`) and fit them (`memplan evaluate --machine {here.key}`)"
        )
        print(f"\nThis machine ({here.label}, profile {here.key}) has no runs here; {how}.")
    _print_notes(here)
    return 0


def _print_notes(here: profiles.MachineProfile) -> None:
    """What oneDNN does here, at each precision, and what the table's columns count."""
    if here.onednn_note:
        print(f"\nThis machine: {here.onednn_note}")
    # The precisions oneDNN does not take here train on another profile of this machine.
    elsewhere: dict[profiles.MachineProfile, list[str]] = {}
    for precision in PRECISIONS:
        if (other := this_profile(precision)) != here:
            elsewhere.setdefault(other, []).append(precision)
    for other, precisions in elsewhere.items():
        named = " and ".join(precisions)
        print(
            f"\nThis machine at {named}: profile {other.key} ({other.label}). "
            f"{other.onednn_note_for(named)}"
        )
    print(
        "\nruns: every status; ok and configurations: ok runs only; family/model/stepping: "
        "the CPU generation (/proc/cpuinfo) its runs recorded; baseline: their median "
        "resident memory right after the framework import; fitted: an evaluation of "
        "that workload on that profile is stored in this database (the bundled evaluations "
        "are stored on the dashboard's first start; `memplan size --machine KEY` "
        "reads them either way)."
    )
