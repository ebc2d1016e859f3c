"""``python -m profiling.job STATE_DIR``: run a launched job's commands in order, detached.

`profiling.launcher` writes ``STATE_DIR/job.json`` (the commands, each with the
phase it stands for) and starts this module in a session of its own, its output
going to the job's log. This process is the only writer of ``STATE_DIR/state.json``:
the phase now (``sweeping``, ``refitting``, then ``finished``, ``failed`` or
``cancelled``), each command's exit code, and, for an *optional* command that
failed (the model refit), the reason taken from its output. A failed optional
command does not fail the job: the sweep's runs are stored either way. A command
that needs new runs (the refit) is skipped, and ``skipped`` says why, when the
job's sweep stored no new ``ok`` or ``oom`` run: every point was already measured
or skipped, and a refit over the same runs would change nothing.

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

from core.errors import INTERRUPTED_EXIT_CODE

JOB_FILE = "job.json"
STATE_FILE = "state.json"

PHASE_STARTING = "starting"
PHASE_FINISHED = "finished"
PHASE_FAILED = "failed"
PHASE_CANCELLED = "cancelled"
FINAL_PHASES = (PHASE_FINISHED, PHASE_FAILED, PHASE_CANCELLED)
# Every memplan CLI reports a failure as one line starting with this.
ERROR_PREFIX = "error: "
# A command that says what it did (the refit: which profiles, which settings) ends its
# output with one line starting with this; the job records it beside the exit code.
OUTCOME_PREFIX = "outcome: "
# How a refit's outcome begins when it refit models ("models refit for unet3d on ...").
MODELS_REFIT = "models refit"
# The run statuses a model learns from, and why a command needing them was skipped.
MEASURED_STATUSES = ("ok", "oom")
NOTHING_NEW = "nothing new measured"


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


def outcome_line(output: str) -> str | None:
    """What a command said it did: its last ``outcome: ...`` line, without the prefix."""
    lines = [line.strip() for line in output.replace("\r", "\n").splitlines()]
    said = [line.removeprefix(OUTCOME_PREFIX) for line in lines if line.startswith(OUTCOME_PREFIX)]
    return said[-1] if said else None


def failure_reason(output: str, exit_code: int) -> str:
    """Why a command failed, from what it printed: its last ``error: ...`` line if any."""
    lines = [line.strip() for line in output.replace("\r", "\n").splitlines() if line.strip()]
    errors = [line.removeprefix(ERROR_PREFIX) for line in lines if line.startswith(ERROR_PREFIX)]
    if errors:
        return errors[-1]
    if lines:
        return f"{lines[-1]} (exit code {exit_code})"
    return f"exit code {exit_code}"


def sweep_row(plan: dict, sweeps: Any) -> Any:
    """The sweeps-table row of this job's sweep: its command, created after the launch.

    ``sweeps``: the sweeps table as a DataFrame (`core.store.load_sweeps`); the row is a
    Series, None when the job's sweep is not (yet) on record.
    """
    if sweeps is None or sweeps.empty:
        return None
    mine = sweeps[
        (sweeps["command"] == plan.get("sweep_command"))
        & (sweeps["created_at"] >= plan.get("started_at", ""))
    ]
    return None if mine.empty else mine.iloc[-1]


def sweep_stored_new_runs(plan: dict[str, Any]) -> bool:
    """Whether the job's sweep stored an ``ok`` or ``oom`` run; True when that cannot be told.

    The sweep is the sweeps-table row of the plan's sweep command created after the
    launch (`sweep_row`); its runs carry its ``sweep_id``.
    """
    # Imported here: only a job with such a command pays for the database's modules.
    from core import store
    from core.errors import StoreError

    db_path = Path(plan.get("db", ""))
    try:
        sweep = sweep_row(plan, store.load_sweeps(db_path))
        if sweep is None:
            return True  # no sweep of this job on record: run the command as before
        runs = store.load_runs(db_path, store.RunFilter(sweep_id=str(sweep["sweep_id"])))
    except StoreError:
        return True
    return bool(runs["status"].isin(MEASURED_STATUSES).any())


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
            "skipped": {},  # phase -> why it did not run
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
            if step.get("needs_new_runs") and not sweep_stored_new_runs(self.plan):
                self.state["skipped"][step["phase"]] = NOTHING_NEW
                self.save()
                print(f"\n== {step['phase']} skipped: {NOTHING_NEW}", flush=True)
                continue
            self.save(phase=step["phase"])
            shown = ["python" if arg == sys.executable else arg for arg in step["argv"]]
            print(f"\n== {step['phase']}: {shlex.join(shown)}", flush=True)
            output_start = log.stat().st_size
            exit_code = subprocess.call(step["argv"], cwd=self.plan.get("cwd"))
            result = {"phase": step["phase"], "exit_code": exit_code, "finished_at": now_iso()}
            with log.open(errors="replace") as text:
                text.seek(output_start)
                output = text.read()
            if exit_code != 0:
                result["reason"] = failure_reason(output, exit_code)
            elif (outcome := outcome_line(output)) is not None:
                result["outcome"] = outcome
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
