"""``memplan``: measure, calibrate, list, show, export and import runs; evaluate the
models on them and answer sizing questions.

Library first, thin CLI: each subcommand is a module of this package with
``prepare(parser)`` and ``run(args) -> int``, which parses its flags, calls
`profiling` or `modeling`, and prints the result. Every `MemplanError` becomes
one line ``error: ...`` on stderr; the exit codes are `memplan.exitcodes`'.

`main` imports only the module of the subcommand it runs: the answers load
scikit-learn and friends (seconds), which ``memplan list`` has no use for. It
installs its SIGTERM handler before that import (a SIGTERM while DuckDB or
TensorFlow loads would otherwise end memplan with rc -15).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from dataclasses import dataclass

# Only the standard library above main(): its first act is to install the signal handlers.

PROGRAM = "memplan"


@dataclass(frozen=True)
class Subcommand:
    """Where a subcommand's ``prepare(parser)`` and ``run(args) -> int`` live."""

    module: str
    summary: str
    prepare: str = "prepare"
    run: str | None = "run"  # None: its own subcommands set theirs (`size`)


COMMANDS = {
    "run": Subcommand("memplan.run", "profile one configuration in a fresh process"),
    "sweep": Subcommand("memplan.sweep", "profile a grid of configurations, resumably"),
    "calibrate": Subcommand(
        "memplan.calibrate",
        "give this machine a model: at most 6 points chosen one at a time from the nearest "
        "profile's (--grid: the fixed grid and every model)",
    ),
    "machines": Subcommand("memplan.machines", "list the machine profiles of the stored runs"),
    "list": Subcommand("memplan.runs", "list stored runs", "prepare_list", "run_list"),
    "show": Subcommand("memplan.runs", "show one run in full", "prepare_show", "run_show"),
    "summary": Subcommand(
        "memplan.runs",
        "peak memory by image size and batch size",
        "prepare_summary",
        "run_summary",
    ),
    "export": Subcommand(
        "memplan.transfer",
        "write runs (and timelines) to CSV or Parquet",
        "prepare_export",
        "run_export",
    ),
    "import": Subcommand(
        "memplan.transfer",
        "store runs measured elsewhere from CSV or Parquet",
        "prepare_import",
        "run_import",
    ),
    "evaluate": Subcommand(
        "memplan.evaluate", "score every model on the stored runs and store the fitted models"
    ),
    "export-results": Subcommand(
        "memplan.results", "write the latest evaluation as Parquet (the bundled results)"
    ),
    "report": Subcommand(
        "memplan.report",
        "write a self-contained HTML sizing report (decision, evidence, chart, runs)",
    ),
    "size": Subcommand("memplan.size", "answer a sizing question from a stored model", run=None),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand's parser; with ``only``, the flags of that one alone (``""``: none).

    A subcommand not prepared still shows in ``--help`` with its summary.
    """
    from core.version import __version__
    from memplan import exitcodes

    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Profile, predict and size the memory of 3D U-Net (and AlexNet) training;\n"
        "the runs and the fitted models live in DuckDB.",
        epilog=exitcodes.TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROGRAM} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, subcommand in COMMANDS.items():
        sub = commands.add_parser(name, help=subcommand.summary, description=subcommand.summary)
        if only is None or name == only:
            module = importlib.import_module(subcommand.module)
            getattr(module, subcommand.prepare)(sub)
            if subcommand.run is not None:
                sub.set_defaults(handler=getattr(module, subcommand.run))
    return parser


class _Signals:
    """Whether SIGINT or SIGTERM arrived while a command ran."""

    received = False


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    _Signals.received = True
    raise KeyboardInterrupt


def _interrupted_query(error: Exception) -> bool:
    """DuckDB turns the KeyboardInterrupt a signal raises inside a query into its own error
    (``Query interrupted``), which no ``except KeyboardInterrupt`` sees."""
    return _Signals.received and "interrupt" in str(error).lower()


def main(argv: list[str] | None = None) -> int:
    # SIGTERM stops a command the same clean way as Ctrl-C; both are noted, so that an error
    # a signal caused inside DuckDB is reported as the interruption it was.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
    _Signals.received = False
    argv = sys.argv[1:] if argv is None else argv
    from memplan import exitcodes  # the codes alone: no DuckDB, no TensorFlow

    try:
        from memplan.commands import run_handler
        from memplan.terminal import escaped_output

        # Before the subcommand come only --help and --version: its name is the first word.
        chosen = next((word for word in argv if not word.startswith("-")), "")
        args = build_parser(chosen if chosen in COMMANDS else "").parse_args(argv)
        # Stored text is printed with its control characters escaped (`memplan.terminal`).
        with escaped_output():
            code = run_handler(args)
            # Written here, not at exit, so a reader that left is seen below (exit 141).
            sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED_EXIT_CODE
    except BrokenPipeError:
        # Without this, a traceback; and Python's flush of stdout at exit would fail again,
        # so stdout goes to /dev/null (the recipe of Python's signal module docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exitcodes.BROKEN_PIPE_EXIT_CODE
    except Exception as error:
        if not _interrupted_query(error):
            raise
        print("interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED_EXIT_CODE
