"""scripts/cpu_time.py counts a detached grandchild's CPU, which ``/usr/bin/time`` misses.

The suite's CPU figures (docs/testing.md) rest on it: the launcher's sweeps run
detached, re-parented away from pytest, so a meter that counted only waited-for
children would report them as free.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUSY_S = 0.6
# A parent that starts a busy grandchild in a new session and exits at once, without
# waiting for it: the grandchild is orphaned, as the launcher's detached sweep is.
DETACHED = f"""
import subprocess, sys
busy = "import time\\nend = time.process_time() + {BUSY_S}\\nwhile time.process_time() < end: pass"
subprocess.Popen([sys.executable, "-c", busy], start_new_session=True)
"""
FIGURE = re.compile(r"cpu_time: ([\d.]+) s CPU .* exit (\d+)")


def test_the_cpu_of_a_detached_grandchild_is_counted_and_the_exit_status_kept() -> None:
    measured = subprocess.run(
        [sys.executable, "scripts/cpu_time.py", "--", sys.executable, "-c", DETACHED],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    [(cpu, status)] = FIGURE.findall(measured.stderr)
    assert float(cpu) >= BUSY_S, measured.stderr
    assert status == "0"

    failed = subprocess.run(
        [sys.executable, "scripts/cpu_time.py", sys.executable, "-c", "raise SystemExit(3)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert failed.returncode == 3
    assert "exit 3" in failed.stderr
