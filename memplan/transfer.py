"""``memplan export`` and ``import``: runs (and timelines) to and from CSV or Parquet."""

from __future__ import annotations

import argparse
from pathlib import Path

from application import bundles
from application import runs as exchange
from core.errors import ConfigError
from memplan import options
from memplan.commands import add_db_option, open_db


def prepare_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="runs file, .csv or .parquet")
    parser.add_argument("--timelines", type=Path, help="also write the samples to this file")
    parser.add_argument("--sweep", help="only this sweep id")
    options.add_workload_filter(parser)
    add_db_option(parser)


def run_export(args: argparse.Namespace) -> int:
    count = exchange.export_runs(
        open_db(args), args.out, args.timelines, sweep_id=args.sweep, workload=args.workload
    )
    print(
        f"exported {count} run(s) to {args.out}"
        f"{f' and their timelines to {args.timelines}' if args.timelines else ''}"
    )
    return 0


def prepare_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        type=Path,
        nargs="?",
        help="runs file, .csv or .parquet (as `export` writes), or .jsonl: GPU runs, one JSON "
        "object a line (docs/data.md), or a folder of run records a folder sweep wrote "
        "(docs/gpu.md)",
    )
    parser.add_argument(
        "--bundled",
        action="store_true",
        help="instead of a file: every bundled measurement and its models (data/REFERENCE.md), "
        "into a database that holds no runs (what a new database starts with)",
    )
    parser.add_argument("--timelines", type=Path, help="the matching samples file")
    parser.add_argument(
        "--created-at",
        help="for .jsonl: when the runs were measured (ISO 8601); default: the date in the "
        "file's name, at midnight UTC",
    )
    parser.add_argument(
        "--alloc-conf",
        help="for .jsonl: the PYTORCH_CUDA_ALLOC_CONF of lines that do not say theirs "
        "('' for the allocator's default)",
    )
    add_db_option(parser)


def run_import(args: argparse.Namespace) -> int:
    if args.bundled == (args.runs is not None):
        raise ConfigError(
            "import takes a runs file or --bundled (the bundled runs): one of them, not both"
        )
    db_path = open_db(args)
    if args.bundled:
        count = bundles.load_bundled(db_path)
        print(f"imported {count} bundled run(s) into {db_path}")
        return 0
    count = exchange.import_runs(
        db_path,
        args.runs,
        args.timelines,
        created_at=args.created_at,
        alloc_conf=args.alloc_conf,
    )
    print(f"imported {count} run(s) into {db_path}")
    return 0
