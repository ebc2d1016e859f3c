"""``python -m dashboard.serve [streamlit options]``: ``streamlit run app.py``, warmed up.

Streamlit runs every page in the server's own process, so a library a page
imports is paid for once per server, by its first visitor: reading the stored
models back imports scikit-learn, skops, XGBoost, gplearn and SymPy, and reads
the trees back through skops, ~1.5 s of a first render on the 2-core VM
(`benchmarks.dashboard_speed` times that cold first render, in a fresh process,
beside the warmed-up one). Here they are imported, the default database created
from the bundled runs if it is new (~2 s on a fresh checkout), and its default
models read back, *before* the server listens, so no visitor, the first included,
waits on them: the address Streamlit prints is served warm.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"
# What the pages import (charts, formulas, the answers), the stored models' libraries
# aside (`modeling.stored.codec.import_readers`). Not the `dashboard` modules: their
# Streamlit caches are made at import, and must be made by the running server.
PAGE_MODULES = (
    "altair",
    "presentation.curves",
    "presentation.formulas",  # SymPy, which reading a stored formula model no longer imports
    "presentation.charts_models",
    "presentation.charts_sizing",
    "presentation.charts_sweeps",
    "presentation.browse",
    "application.sizing",
    "presentation.sizing_report_html",
    # The sidebar's job machinery (its panel, the form's refit choice).
    "application.sweep_job",
    "application.jobs",
    "application.refit_estimate",
    # Streamlit's own, imported by the first alert a page draws: its emoji table compiles
    # one large regular expression (~0.25 s at rest, 1.7 s at load 12 on 2 cores).
    "streamlit.emojis",
)


def warm_up() -> None:
    """Import what the pages and the stored models need, then read the default database
    as its first visitor's page will (`read_default_models`)."""
    from application import models

    for name in PAGE_MODULES:
        importlib.import_module(name)
    models.import_readers()
    read_default_models()
    # Streamlit's first element in a process asks whether it runs in a REPL through
    # `inspect.stack()`, which maps every loaded module to its file the first time
    # (1.2 s of a first render at load 12): done now, the modules above loaded.
    inspect.stack()


def read_default_models() -> None:
    """Prepare the default database as the first visitor's page would, and read back the
    models the Sizing page opens on, so that visitor finds them remembered
    (`application.stored.read` per file state, with which bundle applies;
    `modeling.stored.codec.decode` per model): ~0.9 s of a first render on a database
    of 10,000 runs, and on a fresh checkout the ~2 s of creating it from the bundled
    runs (docs/dashboard_speed.md).
    A new database is created seeded and the bundles installed, as the page does
    (`dashboard.data`; its first page still says it was seeded), except read-only,
    where nothing is written and a missing file is left for the page to explain, as
    is one that cannot be read."""
    from application import bundles, machines, models, stored
    from core import database, workloads
    from core.errors import MemplanError

    db_path = database.default_db_path()
    writable = not database.read_only_mode()
    if not db_path.exists() and not writable:
        return
    try:
        if writable:
            bundles.seed_if_new(db_path)  # the rule every path follows for a new database
            database.ensure_database(db_path)
            bundles.install_every_bundle(db_path)
        read = stored.read(db_path, workloads.DEFAULT_WORKLOAD)
        choice = machines.choose_machine(read)
        models.load_predictors(read, choice.key)
    except MemplanError:
        return


def main(argv: list[str] | None = None) -> int:
    """Warm up, then ``streamlit run app.py`` with ``argv`` in this process."""
    warm_up()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    return int(cli.main() or 0)


if __name__ == "__main__":
    sys.exit(main())
