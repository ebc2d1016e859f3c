"""Submitting to Slurm imports submitit, whose import used to close every logging handler
the process had (``logging.config.dictConfig``): absl's, which TensorFlow installs with
the stderr of the moment as its stream, closed that stream under its owner (a notebook's,
or pytest's capture of stderr, which then failed every later test of the worker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# A fresh process (submitit imports once per process): a handler owning its stream, as
# absl's does, then a submission on a machine without sbatch (imports submitit, refuses).
SUBMIT_BESIDE_A_HANDLER = """
import io, logging, sys
from pathlib import Path

class OwnsItsStream(logging.StreamHandler):
    def close(self):
        super().close()
        self.stream.close()

stream = io.StringIO()
logging.getLogger().addHandler(OwnsItsStream(stream))
from profiling import slurm
request = slurm.JobRequest("debug", 2**30, 60.0, 1, 1)
try:
    slurm.submit(print, ["x"], request, Path("."), python_path=Path("."))
except slurm.SlurmError as error:
    print("refused:", str(error).splitlines()[0])
submitit_logger = logging.getLogger("submitit")
print("stream closed:", stream.closed)
print("submitit handlers:", [(h.stream.name, logging.getLevelName(h.level))
                              for h in submitit_logger.handlers])
print("submitit level:", logging.getLevelName(submitit_logger.level))
"""


def _submit_beside_a_handler(**env: str) -> str:
    environment = {**os.environ, "PATH": "/nonexistent", "PYTHONPATH": str(REPO_ROOT), **env}
    done = subprocess.run(
        [sys.executable, "-c", SUBMIT_BESIDE_A_HANDLER],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_submitting_leaves_the_process_handlers_open_and_configures_submitit_as_it_would() -> None:
    said = _submit_beside_a_handler()
    assert "refused: " in said  # no sbatch here: submitit was imported, then refused
    assert "stream closed: False" in said
    # submitit's own configuration, on its logger alone: warnings to stderr, all to stdout.
    assert "submitit handlers: [('<stderr>', 'WARNING'), ('<stdout>', 'DEBUG')]" in said
    assert "submitit level: INFO" in said


def test_submitits_own_level_variable_is_still_obeyed() -> None:
    assert "submitit level: ERROR" in _submit_beside_a_handler(SUBMITIT_LOG_LEVEL="error")
    said = _submit_beside_a_handler(SUBMITIT_LOG_LEVEL="NOCONFIG")
    assert "submitit handlers: []" in said
    assert "stream closed: False" in said
