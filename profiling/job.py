"""``python -m profiling.job STATE_DIR``: run a launched job's commands in order, detached.

`profiling.launcher` writes ``STATE_DIR/job.json`` (the commands, each with the
phase it stands for) and starts this module in a session of its own, its output
going to the job's log. This process is the only writer of ``STATE_DIR/state.json``:
the phase now (``sweeping``, ``refitting``, then ``finished``, ``failed`` or
``cancelled``), each command's exit code, and, for an *optional* command that
failed (the model refit), the reason taken from its output. A failed optional
command does not fail the job: the sweep's runs are stored either way.

SIGTERM (the launcher's cancel, sent to the whole process group) reaches the
running command too; this process only notes it, waits for the command to stop
cleanly and records ``cancelled``. It imports nothing heavy, so it starts fast.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

JOB_FILE = "job.json"
STATE_FILE = "state.json"

PHASE_STARTING = "starting"
PHASE_FINISHED = "finished"
PHASE_FAILED = "failed"
PHASE_CANCELLED = "cancelled"
FINAL_PHASES = (PHASE_FINISHED, PHASE_FAILED, PHASE_CANCELLED)
# A command stopped by Ctrl-C / SIGTERM: `python -m profiling sweep` exits 130
# after marking its sweep interrupted; the shell's convention for SIGINT.
INTERRUPTED_EXIT_CODE = 130
# Every memplan CLI reports a failure as one line starting with this.
ERROR_PREFIX = "error: "


def now_iso() -> str:
    """Current UTC time as ISO 8601 (seconds), as `core.store.now_iso` writes it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_json(path: Path, values: dict[str, Any]) -> None:
    """Replace ``path`` atomically: readers see the old file or the new one, never half of one."""
    temp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    temp.write_text(json.dumps(values, indent=2))
    os.replace(temp, path)


def read_json(path: Path) -> dict[str, Any]:
    """The object in ``path``; ``{}`` when it does not exist (yet)."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def failure_reason(output: str, exit_code: int) -> str:
    """Why a command failed, from what it printed: its last ``error: ...`` line if any."""
    lines = [line.strip() for line in output.replace("\r", "\n").splitlines() if line.strip()]
    errors = [line.removeprefix(ERROR_PREFIX) for line in lines if line.startswith(ERROR_PREFIX)]
    if errors:
        return errors[-1]
    if lines:
        return f"{lines[-1]} (exit code {exit_code})"
    return f"exit code {exit_code}"


class _Job:
    """The running job: its plan, its state file and whether a stop was asked."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.plan = read_json(state_dir / JOB_FILE)
        me = psutil.Process()
        self.state: dict[str, Any] = {
            "pid": me.pid,
            "create_time": me.create_time(),
            "phase": PHASE_STARTING,
            "started_at": now_iso(),
            "finished_at": None,
            "commands": [],
            "message": "",
        }
        self.stop_requested = False

    def save(self, **changes: Any) -> None:
        self.state.update(changes)
        write_json(self.state_dir / STATE_FILE, self.state)

    def on_sigterm(self, signum: int, frame: object) -> None:
        # The command got the same signal (same process group) and stops on its own.
        self.stop_requested = True

    def run(self) -> int:
        log = Path(self.plan["log"])
        for step in self.plan["commands"]:
            if self.stop_requested:
                break
            self.save(phase=step["phase"])
            shown = ["python" if arg == sys.executable else arg for arg in step["argv"]]
            print(f"\n== {step['phase']}: {shlex.join(shown)}", flush=True)
            output_start = log.stat().st_size
            exit_code = subprocess.call(step["argv"], cwd=self.plan.get("cwd"))
            result = {"phase": step["phase"], "exit_code": exit_code, "finished_at": now_iso()}
            if exit_code != 0:
                with log.open(errors="replace") as text:
                    text.seek(output_start)
                    result["reason"] = failure_reason(text.read(), exit_code)
            self.state["commands"].append(result)
            stopped = self.stop_requested or exit_code == INTERRUPTED_EXIT_CODE
            if stopped:
                return self.finish(PHASE_CANCELLED, f"{step['phase']} was cancelled")
            if exit_code != 0 and not step.get("optional", False):
                return self.finish(
                    PHASE_FAILED, f"{step['phase']} failed: {result['reason']}", exit_code
                )
        if self.stop_requested:
            return self.finish(PHASE_CANCELLED, "cancelled")
        return self.finish(PHASE_FINISHED, "")

    def finish(self, phase: str, message: str, exit_code: int = 0) -> int:
        self.save(phase=phase, message=message, finished_at=now_iso())
        print(f"\n== {phase}{f': {message}' if message else ''}", flush=True)
        if phase == PHASE_CANCELLED:
            return INTERRUPTED_EXIT_CODE
        return exit_code


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m profiling.job STATE_DIR", file=sys.stderr)
        return 2
    job = _Job(Path(args[0]))
    signal.signal(signal.SIGTERM, job.on_sigterm)
    job.save()
    return job.run()


if __name__ == "__main__":
    sys.exit(main())
