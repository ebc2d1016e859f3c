"""A first start: say that a new database was seeded, or offer the bundled runs to an empty one.

Drawn above every page (`app.py`). A database the dashboard created just now
is filled with the bundled measurements (`dashboard.data._prepared`), and one
line says so and what they are, once a session (on the first page a visitor
opens). An existing database that holds no runs, not created by memplan just now
(e.g. by ``memplan list`` on a new ``$MEMPLAN_DB``), gets a button that loads
them, so no page is a dead end. A read-only dashboard writes nothing, so it
offers nothing.
"""

from __future__ import annotations

import streamlit as st

from core.errors import MemplanError
from dashboard import data
from presentation import first_start
from presentation.text import plain

LOAD_BUTTON = "Load the bundled measurements"
# Session state: how many runs the button just loaded, said once after the rerun.
LOADED_KEY = "first_start_loaded"
# Session state: the seeded note was shown (it is said once a session).
SEEDED_SAID_KEY = "first_start_seeded_said"


def render() -> None:
    """The seeded note or the one-click offer; nothing for a database with runs of its own."""
    if data.read_only():
        return
    db = data.database()
    runs = data.runs(db, data.version(db))
    if data.seeded_now(db):
        # Once a session: not above every page for as long as the server runs.
        if not runs.empty and not st.session_state.get(SEEDED_SAID_KEY):
            st.session_state[SEEDED_SAID_KEY] = True
            gpu_runs = data.gpu_runs(db, data.version(db))
            st.caption(plain(first_start.seeded_note(str(db), runs, gpu_runs)))
        return
    loaded = st.session_state.pop(LOADED_KEY, None)
    if loaded is not None:
        st.caption(
            plain(f"Loaded {loaded:,} bundled runs into {db} ({first_start.REFERENCE_DOC}).")
        )
    if not runs.empty:
        return
    st.info(plain(first_start.empty_offer(str(db))))
    if st.button(LOAD_BUTTON, key="first_start_load", type="primary"):
        try:
            with st.spinner("Loading the bundled measurements…"):
                added = data.load_bundled(db)
        except MemplanError as error:
            st.error(plain(error))
            return
        st.session_state[LOADED_KEY] = added
        st.rerun()
