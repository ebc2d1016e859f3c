"""memplan's dashboard: ``streamlit run app.py`` (or ``bash scripts/start.sh``).

Only wiring: the page config, the sidebar every page shares, the pages, each a
script in `dashboard/` that reads like a description of its page, and the footer
under every page (the memplan version).
"""

from pathlib import Path

import streamlit as st

from dashboard import first_start, footer, sidebar

# The tab's icon is a file here, sent inline: given as a Material icon name, Streamlit
# has every page fetch it from fonts.gstatic.com, and no page may ask the internet for
# anything (the icons beside the page names are drawn from Streamlit's own font).
FAVICON = Path(__file__).resolve().parent / "dashboard" / "favicon.svg"

st.set_page_config(page_title="memplan", page_icon=FAVICON, layout="wide")

pages = st.navigation(
    [
        st.Page(
            "dashboard/models_page.py", title="Models", icon=":material/show_chart:", default=True
        ),
        st.Page("dashboard/sizing_page.py", title="Sizing", icon=":material/straighten:"),
        st.Page("dashboard/sweeps_page.py", title="Sweeps", icon=":material/table_view:"),
    ]
)
# The footer is written first, below the page's container, so a page (or the
# sidebar) that stops early, on a damaged database say, still has it.
page = st.container()
footer.render()
sidebar.render()
with page:
    # Above every page: a new database seeded from the bundled runs, or an empty one's offer.
    first_start.render()
    pages.run()
