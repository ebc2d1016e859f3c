"""The dashboard launcher warms the server up: the stored models' libraries load as it starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dashboard import serve

REPO = Path(__file__).resolve().parents[2]


def test_the_warm_up_imports_the_model_libraries_but_not_streamlit_caches_or_tensorflow() -> None:
    probe = (
        "import sys; from dashboard import serve; serve.warm_up(); "
        "print(sorted(m for m in ('sklearn', 'skops', 'xgboost', 'gplearn', 'sympy', "
        "'tensorflow', 'torch', 'dashboard.data') if m in sys.modules))"
    )

    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )

    assert done.stdout == "['gplearn', 'sklearn', 'skops', 'sympy', 'xgboost']\n"


def test_the_launcher_runs_the_app_through_the_warm_up() -> None:
    start = (REPO / "scripts" / "start.sh").read_text()

    assert 'python -m dashboard.serve "$@"' in start
    assert serve.APP == REPO / "app.py"
