"""``python -m dashboard.serve [streamlit options]``: ``streamlit run app.py``, warmed up.

Streamlit runs every page in the server's own process, so a library a page
imports is paid for once per server, by its first visitor: reading the stored
models back imports scikit-learn, skops, XGBoost, gplearn and SymPy, several
seconds of CPU on the 2-core VM (`benchmarks.dashboard_speed` times exactly that
cold first render, in a fresh process). Here a background thread imports them
while the server starts, so the first visitor finds them loaded; a visitor who
comes sooner waits on the same imports, no longer than without it.
"""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app.py"
# What the pages import (charts, formulas, the answers), the stored models' libraries
# aside (`modeling.stored.codec.import_readers`). Not the `dashboard` modules: their
# Streamlit caches are made at import, and must be made by the running server.
PAGE_MODULES = (
    "altair",
    "presentation.curves",
    "presentation.formulas",  # SymPy, which reading a stored formula model no longer imports
    "presentation.charts",
    "presentation.charts_sweeps",
    "presentation.browse",
    "application.sizing",
)


def warm_up() -> None:
    """Import what the pages and the stored models need."""
    from modeling.stored import codec

    for name in PAGE_MODULES:
        importlib.import_module(name)
    codec.import_readers()


def main(argv: list[str] | None = None) -> int:
    """Start the warm-up thread, then ``streamlit run app.py`` with ``argv`` in this process."""
    threading.Thread(target=warm_up, name="memplan-warm-up", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    return int(cli.main() or 0)


if __name__ == "__main__":
    sys.exit(main())
