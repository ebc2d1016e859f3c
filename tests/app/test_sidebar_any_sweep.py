"""The sidebar shows, and can cancel, any sweep writing to its database, whoever started it.

A stand-in CLI sweep holds the database's sweep lock as `profiling.local_sweep.run_sweep`
does, and sleeps; no TensorFlow.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

from core import database, store
from profiling import launcher

APP = str(Path(__file__).resolve().parents[2] / "app.py")
COMMAND = "memplan sweep --image-sizes 16 --batch-sizes 1 2"
CLI_SWEEP = """
import sys, time
from profiling import sweeplock
from core import store
db, command = sys.argv[1], sys.argv[2]
with sweeplock.hold(db, "fromcli", command, 2) as lock:
    store.create_sweep(db, "fromcli", command, {}, 2)
    lock.update(points_done=1, current_point="16 batch 2")
    print("holding", flush=True)
    time.sleep(120)
"""


def sidebar_texts(at: AppTest) -> str:
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error"):
        parts += [str(element.value) for element in at.sidebar.get(kind)]
    parts += [element.proto.text for element in at.sidebar.get("progress")]
    return "\n".join(parts)


def test_a_cli_sweep_shows_in_the_sidebar_blocks_a_launch_and_can_be_cancelled(reference_db):
    cli = subprocess.Popen(
        [sys.executable, "-c", CLI_SWEEP, str(reference_db), COMMAND],
        cwd=database.REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert cli.stdout.readline().strip() == "holding"
        at = AppTest.from_file(APP, default_timeout=60).run()
        assert not at.exception
        said = sidebar_texts(at)
        assert "A sweep this dashboard did not launch is writing to the database" in said
        assert COMMAND in said and f"pid {cli.pid}" in said
        assert "1 / 2 points" in said and "Now measuring **16 batch 2**" in said
        assert not at.sidebar.dataframe  # the points' table, with their jobs, is Slurm's
        labels = [button.label for button in at.sidebar.button]
        assert "Cancel sweep" in labels and "Launch sweep" not in labels

        at.sidebar.button(key="cancel_sweep").click().run()
        assert cli.wait(timeout=10) == -signal.SIGTERM
        assert not launcher.status(reference_db).running
        assert "Launch sweep" in [button.label for button in at.sidebar.button]
        sweeps = store.load_sweeps(reference_db)
        assert sweeps.loc[sweeps["sweep_id"] == "fromcli", "status"].tolist() == ["interrupted"]
    finally:
        cli.kill()
        cli.wait()
