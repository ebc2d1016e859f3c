"""The Sizing page (placeholder until it is written)."""

import streamlit as st

st.title("Sizing")
