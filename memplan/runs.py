"""``memplan list``, ``show`` and ``summary``: the stored runs, as tables or ``--json``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from core import profiles, store, targets, workloads
from core.records import STATUSES
from memplan import jsonout, options
from memplan.commands import add_db_option, open_db
from presentation import workload_labels
from presentation.summary import PEAK_COLUMNS, networks, peak_table, to_markdown

# Columns `list` prints; `--all-columns` prints every stored one.
LIST_COLUMNS = [
    "run_id",
    "sweep_id",
    "status",
    "workload",
    *workloads.IMAGE_COLUMNS,
    "batch_size",
    *workloads.LISTED_KNOBS,  # the knobs declared `listed` (`core.workloads.knobs.Knob`)
    "peak_sampled_bytes",
    "peak_hwm_bytes",
    "wall_s",
    "hostname",
]


def _add_output_options(parser: argparse.ArgumentParser, *others: tuple[str, str]) -> None:
    """``--json`` and the other output formats given as (flag, help): at most one of them."""
    group = parser.add_mutually_exclusive_group()
    for flag, help_text in others:
        group.add_argument(flag, action="store_true", help=help_text)
    options.add_json_option(group)


# --- list --------------------------------------------------------------------------------


def list_columns(target: targets.MemoryTarget) -> list[str]:
    """The columns `list` shows for runs of ``target``: its figures where host RAM's are."""
    if target is targets.HOST_RAM_TARGET:
        return LIST_COLUMNS
    at = LIST_COLUMNS.index("peak_sampled_bytes")
    return [*LIST_COLUMNS[:at], *target.columns, "gpu_name"]


def prepare_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        choices=tuple(targets.TARGETS),
        default=targets.DEFAULT_TARGET,
        help="which memory the runs measured: host_ram (the default: runs memplan measures) "
        "or gpu_memory (GPU runs imported from JSON lines)",
    )
    parser.add_argument("--sweep", help="only this sweep id")
    parser.add_argument("--status", choices=STATUSES)
    parser.add_argument("--host", help="only runs measured on this hostname")
    options.add_workload_filter(parser)
    _add_output_options(parser, ("--csv", "CSV on stdout instead of a table"))
    parser.add_argument("--all-columns", action="store_true")
    add_db_option(parser)


def run_list(args: argparse.Namespace) -> int:
    db_path = open_db(args)
    target = targets.target(args.target)
    runs = store.load_runs(
        db_path,
        store.RunFilter(
            sweep_id=args.sweep,
            status=args.status,
            hostname=args.host,
            workload=args.workload,
            target=target.name,
        ),
    )
    if not args.all_columns:
        runs = runs[list_columns(target)]
    if args.json:
        return jsonout.emit(jsonout.records(runs))
    if args.csv:
        runs.to_csv(sys.stdout, index=False)
        return 0
    if runs.empty:
        print("no runs match")
        return 0
    shown = runs.copy()
    host = target is targets.HOST_RAM_TARGET
    for column in ("peak_sampled_bytes", "peak_hwm_bytes") if host else target.columns:
        if column in shown:
            shown[column.replace("_bytes", "_gib")] = shown.pop(column).map(
                lambda v: "" if pd.isna(v) else f"{v / 2**30:.3f}"
            )
    if "run_id" in shown:
        shown["run_id"] = shown["run_id"].str[:12]
    print(shown.to_string(index=False))
    print(f"{len(shown)} run(s)")
    return 0


# --- show --------------------------------------------------------------------------------


def prepare_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", help="a run id or a unique prefix of one (see `list`)")
    parser.add_argument("--timeline", action="store_true", help="print the samples as CSV too")
    options.add_json_option(parser)
    add_db_option(parser)


def run_show(args: argparse.Namespace) -> int:
    db_path = open_db(args)
    run = store.get_run(db_path, args.run_id)
    samples = store.load_samples(db_path, [run["run_id"]])
    if args.json:
        shown: dict[str, Any] = {**run, "samples": len(samples)}
        if args.timeline:
            shown["timeline"] = jsonout.records(samples[["t_s", "rss_bytes"]])
        return jsonout.emit(shown)
    width = max(len(name) for name in run)
    for name, value in run.items():
        if name.endswith("_bytes") and isinstance(value, int):
            value = f"{value} ({options.gib(value)})"
        print(f"{name:<{width}}  {value}")
    print(f"{'samples':<{width}}  {len(samples)}")
    if args.timeline:
        samples[["t_s", "rss_bytes"]].to_csv(sys.stdout, index=False)
    return 0


# --- summary -----------------------------------------------------------------------------


def prepare_summary(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweep", help="only this sweep id")
    parser.add_argument("--host", help="only runs measured on this hostname")
    parser.add_argument(
        "--metric",
        choices=tuple(PEAK_COLUMNS),
        default="hwm",
        help="kernel high-water mark (default) or the sampled peak",
    )
    options.add_workload_filter(parser)
    options.add_machine_filter(parser)
    _add_output_options(parser, ("--markdown", "a Markdown table"))
    add_db_option(parser)


def run_summary(args: argparse.Namespace) -> int:
    runs = store.load_runs(
        open_db(args),
        store.RunFilter(sweep_id=args.sweep, hostname=args.host, workload=args.workload),
    )
    runs = options.runs_of_machine(runs, args.machine)
    if args.json:
        return jsonout.emit(summary_cells(runs, args.metric))
    if runs.empty:
        print("no runs match")
        return 0
    found = profiles.profiles_in(runs)
    # A median over two machines' (or networks') runs would be no one's peak: one table each.
    for key, profile in found.items():
        mine = networks(profiles.runs_of(runs, key))
        if len(found) > 1:
            print(f"{'## ' if args.markdown else ''}{profile.label} (profile {key})\n")
        for label, network_runs in mine:
            if len(mine) > 1:
                print(f"{'### ' if args.markdown else ''}{label}\n")
            table = peak_table(network_runs, args.metric)
            print(to_markdown(table) if args.markdown else table.to_string())
            print()
    print(
        f"Peak {args.metric} in GiB (median over repeats, xN = N runs); other cells "
        "show why a point has no measurement."
    )
    return 0


def summary_cells(runs: pd.DataFrame, metric: str) -> list[dict[str, Any]]:
    """One dict per cell of the summary tables (``runs`` keyed by `profiles.with_keys`).

    peak_bytes : the median ``metric`` peak of the cell's ok runs, bytes; None
    where none is ok, and ``status`` then says why (the table's cell).
    """
    cells = []
    for key, profile in profiles.profiles_in(runs).items():
        for label, network_runs in networks(profiles.runs_of(runs, key)):
            table = peak_table(network_runs, metric)
            shapes = [workload_labels.image_shape(r) for r in network_runs.to_dict("records")]
            images = [workload_labels.image_label(shape) for shape in shapes]
            grouped = network_runs.assign(image=images).groupby(["image", "batch_size"])
            for (image, batch), group in grouped:
                ok = group[group["status"] == "ok"]
                cell = str(table.loc[image, f"batch {batch}"])
                cells.append(
                    {
                        "profile": key,
                        "machine": profile.label,
                        "network": label,
                        "image_size": image,
                        "batch_size": int(batch),
                        "metric": metric,
                        "peak_bytes": ok[PEAK_COLUMNS[metric]].median() if len(ok) else None,
                        "ok_runs": len(ok),
                        "runs": len(group),
                        "status": "ok" if len(ok) else cell,
                    }
                )
    return cells
