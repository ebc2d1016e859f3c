"""``memplan``: measure, calibrate, list, show, export and import runs; evaluate the
models on them and answer sizing questions.

Library first, thin CLI: each subcommand is a module of this package with
``prepare(parser)`` and ``run(args) -> int``, which parses its flags, calls
`profiling` or `modeling`, and prints the result. Every `MemplanError` becomes
one line ``error: ...`` on stderr; the exit codes are `memplan.exitcodes`'.
"""

from __future__ import annotations

import argparse
import signal
import sys

from core.commands import Command, add_commands, run_handler
from core.version import __version__
from memplan import (
    calibrate,
    evaluate,
    exitcodes,
    machines,
    report,
    results,
    run,
    runs,
    size,
    sweep,
    transfer,
)

PROGRAM = "memplan"
# name -> (adds the subcommand's arguments, runs it and returns the exit code, summary)
COMMANDS: dict[str, Command] = {
    "run": (run.prepare, run.run, run.SUMMARY),
    "sweep": (sweep.prepare, sweep.run, sweep.SUMMARY),
    "calibrate": (calibrate.prepare, calibrate.run, calibrate.SUMMARY),
    "machines": (machines.prepare, machines.run, machines.SUMMARY),
    "list": (runs.prepare_list, runs.run_list, runs.LIST_SUMMARY),
    "show": (runs.prepare_show, runs.run_show, runs.SHOW_SUMMARY),
    "summary": (runs.prepare_summary, runs.run_summary, runs.SUMMARY_SUMMARY),
    "export": (transfer.prepare_export, transfer.run_export, transfer.EXPORT_SUMMARY),
    "import": (transfer.prepare_import, transfer.run_import, transfer.IMPORT_SUMMARY),
    "evaluate": (evaluate.prepare, evaluate.run, evaluate.SUMMARY),
    "export-results": (results.prepare, results.run, results.SUMMARY),
    "report": (report.prepare, report.run, report.SUMMARY),
}
# Longer descriptions than the one-line summaries `memplan --help` lists.
DESCRIPTIONS = {"export-results": results.DESCRIPTION, "report": report.DESCRIPTION}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Profile, predict and size the memory of 3D U-Net (and AlexNet) training;\n"
        "the runs and the fitted models live in DuckDB.",
        epilog=exitcodes.TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROGRAM} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(commands, COMMANDS)
    for name, description in DESCRIPTIONS.items():
        commands.choices[name].description = description
    sizing = commands.add_parser("size", help=size.SUMMARY, description=size.SUMMARY)
    questions = sizing.add_subparsers(dest="question", required=True, metavar="QUESTION")
    add_commands(questions, size.COMMANDS)
    return parser


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # SIGTERM stops a sweep the same clean way as Ctrl-C.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        return run_handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED_EXIT_CODE
