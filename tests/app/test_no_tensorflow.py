"""Drawing any page never imports TensorFlow or torch: a slider must not wait for them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
PAGES = ("dashboard/models_page.py", "dashboard/sizing_page.py", "dashboard/sweeps_page.py")

# Runs in a fresh interpreter, so nothing another test imported counts.
PROBE = f"""
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=120).run()
for page in {PAGES!r}:
    at.switch_page(page).run()
    assert not at.exception, (page, [e.message for e in at.exception])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "torch"))
print(loaded)
sys.exit(1 if loaded else 0)
"""


def test_no_page_imports_tensorflow_keras_or_torch(reference_db: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
