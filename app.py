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

# Sizing first and at the root: the question a person comes with, and its answer. Its
# address before it was the root, "/sizing_page", still opens it, the link's question
# kept: the same script, a hidden page of its own (the root's is named "sizing").
SIZING_SCRIPT = "dashboard/sizing_page.py"
SIZING_ICON = ":material/straighten:"
pages = st.navigation(
    [
        st.Page(SIZING_SCRIPT, title="Sizing", icon=SIZING_ICON, url_path="sizing", default=True),
        st.Page("dashboard/models_page.py", title="Models", icon=":material/show_chart:"),
        st.Page("dashboard/sweeps_page.py", title="Sweeps", icon=":material/table_view:"),
        st.Page(SIZING_SCRIPT, title="Sizing", url_path="sizing_page", visibility="hidden"),
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
