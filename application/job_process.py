"""The process a launched job runs: ``python -m application.<job> SPEC.json``, one spec file.

`application.sweep_job` and `application.refit` are each started by the launcher on a
JSON spec (`profiling.jobspec.SweepJob`, `application.refit.RefitJob`). What such a
process does around its job is the same for both: one argument, the file read and
checked, a `MemplanError` as one ``error: ...`` line and exit 2 (the job's log shows it
as the reason), SIGTERM (the launcher's cancel) stopping it as Ctrl-C does.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

from core.errors import ERROR_EXIT_CODE, INTERRUPTED_EXIT_CODE, MemplanError


def run_spec_file(argv: list[str], runner: str, what: str, run: Callable[[str], int]) -> int:
    """``run`` the spec text of the one file ``argv`` names; the exit code.

    ``runner`` is the module (for the usage line), ``what`` the job in words ("sweep job").
    """
    if len(argv) != 1:
        print(f"usage: python -m {runner} SPEC.json", file=sys.stderr)
        return ERROR_EXIT_CODE
    try:
        code = run(Path(argv[0]).read_text())
    except MemplanError as error:
        print(f"error: {error}", file=sys.stderr)
        return ERROR_EXIT_CODE
    except OSError as error:
        print(f"error: cannot read the {what} {argv[0]}: {error.strerror}", file=sys.stderr)
        return ERROR_EXIT_CODE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT_CODE
    sys.stdout.flush()
    return code


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(main: Callable[[], int]) -> None:
    """Run a job process's ``main`` with SIGTERM and SIGINT as Ctrl-C, and exit with its code."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    sys.exit(main())
