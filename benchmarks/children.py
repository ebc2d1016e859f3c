"""Run a benchmark's measurement in a fresh Python process, with TensorFlow's own kernels.

A peak is only the measured code's when the process started for it: the
parent's imports and allocations would count otherwise. The child is
``python -m MODULE --child ...`` from the repository root, oneDNN off (as on a
CPU where it is TensorFlow's default), and its answer is the last line it prints
(or, for a child that measures several things, its last lines, one each).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# The child runs as `python -m benchmarks.NAME` from the repository root.
REPOSITORY_ROOT = Path(__file__).resolve().parents[1]


def run_child(module: str, arguments: list[str], what: str) -> str:
    """The last line ``python -m module --child *arguments`` prints; exits naming ``what``."""
    return child_lines(module, arguments, what)[-1]


def child_lines(module: str, arguments: list[str], what: str) -> list[str]:
    """Every line ``python -m module --child *arguments`` prints; exits naming ``what``."""
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
    command = [sys.executable, "-m", module, "--child", *arguments]
    done = subprocess.run(
        command, env=env, cwd=REPOSITORY_ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()
