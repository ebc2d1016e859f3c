"""memplan's dashboard: ``streamlit run app.py`` (or ``bash scripts/start.sh``).

Only wiring: the page config, the sidebar every page shares, and the pages,
each a script in `dashboard/` that reads like a description of its page.
"""

import streamlit as st

from dashboard import sidebar

st.set_page_config(page_title="memplan", page_icon=":material/memory:", layout="wide")

pages = st.navigation(
    [
        st.Page(
            "dashboard/models_page.py", title="Models", icon=":material/show_chart:", default=True
        ),
        st.Page("dashboard/sizing_page.py", title="Sizing", icon=":material/straighten:"),
        st.Page("dashboard/sweeps_page.py", title="Sweeps", icon=":material/table_view:"),
    ]
)
sidebar.render()
pages.run()
