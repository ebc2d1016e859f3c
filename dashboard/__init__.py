"""The Streamlit dashboard's pages; `app.py` wires them together with ``st.navigation``."""
