"""Runs in and out: one profiled run, a runs file exported or imported, the dashboard's
uploads (`profiling.runner`, `profiling.exchange`, `profiling.uploads`).

Each is profiling's own function with typed inputs (a path, a `RunSettings`, an
`Upload`), named here so `memplan run`, `memplan export` / `import` and the
sidebar's import form import `application`, never `profiling`.
"""

from __future__ import annotations

from profiling.exchange import export_runs, import_runs
from profiling.runner import run_point
from profiling.uploads import Upload, import_uploads

__all__ = ["Upload", "export_runs", "import_runs", "import_uploads", "run_point"]
