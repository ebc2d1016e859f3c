"""``memplan export-results``: the latest evaluation and its models as Parquet files."""

from __future__ import annotations

import argparse
from pathlib import Path

from application import bundles, stored
from application import models as results
from memplan import model_options
from memplan.commands import add_db_option, add_workload_option

DESCRIPTION = (
    "write the latest evaluation and its models as Parquet files; "
    "data/reference_results is made this way"
)


def prepare(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument("directory", type=Path, help="folder for the four Parquet files")
    add_workload_option(parser)
    model_options.add_machine_option(parser)
    model_options.add_framework_option(parser, "export the evaluation of this framework's profile")
    add_db_option(parser)


def run(args: argparse.Namespace) -> int:
    db_path = model_options.db_for_reading(args)
    machine = stored.choose_machine(db_path, args.workload, args.machine, framework=args.framework)
    directory = bundles.export_results(db_path, args.directory, args.workload, machine.key)
    tables = ", ".join(results.RESULT_TABLES)
    print(
        f"wrote the latest {args.workload} evaluation's {tables}, {machine.sentence()}, "
        f"to {directory}"
    )
    return 0
