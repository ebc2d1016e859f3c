#!/usr/bin/env bash
# memplan's dashboard on the bundled reference data, set-up included:
#   bash scripts/start.sh [streamlit options, e.g. --server.port 8600]
# Serves on http://127.0.0.1:8501 (.streamlit/config.toml); MEMPLAN_DB picks another database.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
# dashboard.serve is `streamlit run app.py` with the pages' libraries imported as it starts.
exec .venv/bin/python -m dashboard.serve "$@"
