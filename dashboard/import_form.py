"""The sidebar's import: runs measured on another machine, uploaded as `memplan export` writes them.

The uploads are checked and stored as a file import is (`profiling.uploads`): all or
nothing, and a refused file is named in the message.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from application import runs as uploads
from core.errors import MemplanError
from presentation import text

UPLOAD_TYPES = ["csv", "parquet"]
RUNS_FILE_KEY = "import_runs_file"
TIMELINES_FILE_KEY = "import_timelines_file"


def draw(db: Path) -> None:
    """The two file boxes and the Import button; imports into ``db`` when clicked."""
    st.caption("Runs measured on another machine, as `memplan export` writes them.")
    runs_file = st.file_uploader("Runs file (CSV or Parquet)", type=UPLOAD_TYPES, key=RUNS_FILE_KEY)
    timelines_file = st.file_uploader(
        "Timelines file (optional)", type=UPLOAD_TYPES, key=TIMELINES_FILE_KEY
    )
    if not st.button("Import", disabled=runs_file is None):
        return
    runs = uploads.Upload(runs_file.name, runs_file.getvalue())
    timelines = (
        uploads.Upload(timelines_file.name, timelines_file.getvalue()) if timelines_file else None
    )
    try:
        count = uploads.import_uploads(db, runs, timelines)
    except MemplanError as error:
        st.error(f"Nothing was imported. {text.plain(error)}")
    else:
        st.success(f"Imported {count} run(s) from {text.plain(runs_file.name)}.")
