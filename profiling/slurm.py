"""Talking to Slurm: submit points through submitit, read job states, cancel jobs.

Submission goes through submitit (`submitit.SlurmExecutor`): it writes the
sbatch script, the job array and the job logs under the work directory and
runs `profiling.slurm_job.measure` on the node. Job states are read with
``squeue --states=all`` (every job slurmctld still remembers, ``MinJobAge``
after it ended) and, for older ones, ``sacct`` where the cluster keeps
accounting; submitit's own watcher needs ``sacct``, which a cluster without
slurmdbd (the tests' one-node cluster among them) does not have.

What a job's end means for the run (`OUTCOMES`) is data, not an exception:
OUT_OF_MEMORY is ``oom``, TIMEOUT ``timeout``, CANCELLED ``interrupted``;
NODE_FAIL, PREEMPTED and BOOT_FAIL are the node's fault, not the point's, and
are submitted again once (`RETRIED_STATES`).
"""

from __future__ import annotations

import logging
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from core.errors import ConfigError, MemplanError

# squeue/sacct/scontrol answer in seconds on a healthy cluster; a hung slurmctld must
# not hang the sweep, which polls again later.
COMMAND_TIMEOUT_S = 60.0
# A job's state while slurmctld still has it to schedule or run (squeue(1), JOB STATE CODES).
QUEUED_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING_STATES = frozenset(
    {"CONFIGURING", "RUNNING", "COMPLETING", "RESIZING", "SIGNALING", "STAGE_OUT", "SUSPENDED"}
)
ACTIVE_STATES = QUEUED_STATES | RUNNING_STATES
# The run status of a job that ended without writing its record.
OUTCOMES: dict[str, str] = {
    "OUT_OF_MEMORY": "oom",
    "TIMEOUT": "timeout",
    "DEADLINE": "timeout",
    "CANCELLED": "interrupted",
    "FAILED": "error",
    "COMPLETED": "error",  # it ended well but its record never reached the work directory
    "NODE_FAIL": "killed",
    "PREEMPTED": "killed",
    "BOOT_FAIL": "killed",
    "REVOKED": "killed",
}
# A job step killed for memory ends FAILED; its log says why: "task 0: Out Of Memory" (a
# cgroup's OOM kill) or "Exceeded job memory limit" (Slurm's own accounting, OverMemoryKill).
_OUT_OF_MEMORY_IN_LOG = re.compile(
    r"out of memory|oom[-_ ]kill|exceeded (job )?memory limit", re.IGNORECASE
)
# The node's fault, not the point's: submitted once more before the end is recorded.
RETRIED_STATES = frozenset({"NODE_FAIL", "PREEMPTED", "BOOT_FAIL"})
MAX_ATTEMPTS = 2
# Slurm's --time is whole minutes; the job also imports the framework and starts the
# child before the point's own timeout (enforced by the runner's watchdog) begins.
JOB_START_ALLOWANCE_S = 180.0
# What a Slurm client command needs, with how to get it.
INSTALL_HINT = (
    "Slurm's client commands (sbatch, squeue, scancel, sinfo) are not on PATH; run the sweep "
    "on a cluster's login node, or install them (Debian: apt-get install slurm-client)"
)
_MIB = 2**20


def outcome(state: str, log: str = "") -> str:
    """The run status of a job that ended in ``state`` without a record; ``log`` its log's tail."""
    if state == "FAILED" and _OUT_OF_MEMORY_IN_LOG.search(log):
        return "oom"
    return OUTCOMES.get(state, "killed")


class SlurmError(MemplanError):
    """Slurm refused or could not answer (its own words are in the message)."""


@dataclass(frozen=True)
class JobRequest:
    """The resources of one group of points, submitted as one job array."""

    partition: str
    mem_bytes: int
    time_s: float
    cpus_per_task: int
    max_parallel: int
    account: str | None = None

    @property
    def mem_mib(self) -> int:
        return math.ceil(self.mem_bytes / _MIB)

    @property
    def time_min(self) -> int:
        return max(1, math.ceil((self.time_s + JOB_START_ALLOWANCE_S) / 60))


@dataclass(frozen=True)
class Partition:
    """What ``sinfo`` says a partition's nodes have (the largest of them)."""

    name: str
    max_memory_bytes: int
    max_cpus: int


def _run(command: Sequence[str]) -> str:
    if shutil.which(command[0]) is None:
        raise SlurmError(INSTALL_HINT)
    try:
        done = subprocess.run(
            list(command),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SlurmError(
            f"`{shlex.join(command)}` did not answer within {COMMAND_TIMEOUT_S:g} s"
        ) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip() or f"exit code {done.returncode}"
        raise SlurmError(f"`{shlex.join(command)}` failed: {said}")
    return done.stdout


def partition(name: str) -> Partition:
    """The partition called ``name``; `ConfigError` naming the known ones if there is none."""
    lines = _run(["sinfo", "--noheader", "--partition", name, "--format", "%m %c"]).split()
    if not lines:
        known = sorted(
            {p.rstrip("*") for p in _run(["sinfo", "--noheader", "--format", "%P"]).split()}
        )
        raise ConfigError(
            f"Slurm has no partition {name!r}; its partitions are: {', '.join(known) or 'none'}"
        )
    # "%m %c" is memory (MB, i.e. MiB) and CPUs per node; "64000+" means "at least".
    memories = [int(value.rstrip("+")) for value in lines[0::2]]
    cpus = [int(value.rstrip("+")) for value in lines[1::2]]
    return Partition(name=name, max_memory_bytes=max(memories) * _MIB, max_cpus=max(cpus))


def _state_word(state: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``."""
    return state.split()[0] if state.split() else state


def job_states(job_ids: Iterable[str]) -> dict[str, str]:
    """The state of each job id slurmctld or accounting still knows (``1234`` or ``1234_5``)."""
    wanted = set(job_ids)
    if not wanted:
        return {}
    # --array: one line per array task; --states=all: ended jobs too, while remembered.
    listing = _run(["squeue", "--noheader", "--array", "--states=all", "--format", "%i|%T"])
    states = _listed_states(listing, wanted)
    missing = wanted - set(states)
    if missing and shutil.which("sacct"):
        states.update(_accounted_states(missing))
    return states


def _task_ids(listed: str) -> list[str]:
    """``7_[0-2,5%2]`` -> ``7_0 7_1 7_2 7_5``; any other id as it is."""
    match = re.fullmatch(r"(\d+)_\[([\d,\-]+)(?:%\d+)?\]", listed)
    if match is None:
        return [listed]
    main, tasks = match.groups()
    ids = []
    for part in tasks.split(","):
        first, _, last = part.partition("-")
        ids += [f"{main}_{task}" for task in range(int(first), int(last or first) + 1)]
    return ids


def _listed_states(listing: str, wanted: set[str]) -> dict[str, str]:
    """The states of the wanted ids in squeue's ``%i|%T`` lines.

    An array task is listed on its own once it has started; before that it may
    be listed in a range (``7_[0-3]``), and an array cancelled before any task
    started is listed only as its job (``7``), which then speaks for every task.
    """
    listed: dict[str, str] = {}
    for line in listing.splitlines():
        job_id, _, state = line.strip().partition("|")
        for task in _task_ids(job_id):
            listed[task] = _state_word(state)
    states = {}
    for job_id in wanted:
        state = listed.get(job_id) or listed.get(job_id.split("_")[0])
        if state:
            states[job_id] = state
    return states


def _accounted_states(job_ids: set[str]) -> dict[str, str]:
    """States from Slurm's accounting, or nothing where the cluster keeps none."""
    command = ["sacct", "--noheader", "--parsable2", "--allocations", "--format", "JobID,State"]
    for main_id in sorted({job_id.split("_")[0] for job_id in job_ids}):
        command += ["--jobs", main_id]
    try:
        listing = _run(command)
    except SlurmError:
        return {}  # no slurmdbd: accounting is off, and squeue is all there is
    states = {}
    for line in listing.splitlines():
        job_id, _, state = line.strip().partition("|")
        if job_id in job_ids:
            states[job_id] = _state_word(state)
    return states


def cancel(job_ids: Iterable[str]) -> None:
    """``scancel`` the jobs (ended ones are ignored by Slurm)."""
    ids = sorted(set(job_ids))
    if ids:
        _run(["scancel", *ids])


def submit(
    function: object,
    arguments: Sequence[str],
    request: JobRequest,
    log_dir: Path,
    *,
    python_path: Path,
) -> list[str]:
    """Submit ``function(argument)`` for each argument as one job array; the job ids in order.

    ``python_path`` is put first on the job's PYTHONPATH so the node imports this
    memplan; the node must be able to run ``sys.executable`` (a shared environment).
    """
    submitit = import_submitit()  # the local path never needs it
    if shutil.which("sbatch") is None or shutil.which("srun") is None:
        raise SlurmError(INSTALL_HINT)
    executor = submitit.SlurmExecutor(folder=log_dir, python=shlex.quote(sys.executable))
    extra = {"account": request.account} if request.account else {}
    executor.update_parameters(
        partition=request.partition,
        mem=f"{request.mem_mib}M",
        time=request.time_min,
        cpus_per_task=request.cpus_per_task,
        array_parallelism=request.max_parallel,
        job_name="memplan",
        setup=[f"export PYTHONPATH={shlex.quote(str(python_path))}${{PYTHONPATH:+:$PYTHONPATH}}"],
        **extra,
    )
    try:
        with executor.batch():
            jobs = [executor.submit(function, argument) for argument in arguments]
    except (submitit.core.utils.FailedJobError, submitit.core.utils.FailedSubmissionError) as error:
        raise SlurmError(f"sbatch refused the jobs: {str(error).strip()}") from None
    return [str(job.job_id) for job in jobs]


# submitit's variable: its logger's level, or NOCONFIG for no logging set-up on import.
SUBMITIT_LOG_VARIABLE = "SUBMITIT_LOG_LEVEL"
NO_CONFIG = "NOCONFIG"


def import_submitit() -> ModuleType:
    """submitit, imported without closing the logging handlers this process already has.

    On import submitit calls ``logging.config.dictConfig``, which closes every handler of
    the process: a handler that owns its stream closes it. absl's (TensorFlow's) holds
    the stderr of the moment it was imported, so in a process that imported TensorFlow
    first (a notebook, a test runner capturing stderr) that stream was closed under its
    owner. Imported with ``SUBMITIT_LOG_LEVEL=NOCONFIG`` it configures nothing; its logger
    then gets the two handlers its configuration gives it, and nothing else changes.
    """
    if "submitit" in sys.modules:
        import submitit

        return submitit
    asked = os.environ.get(SUBMITIT_LOG_VARIABLE)
    os.environ[SUBMITIT_LOG_VARIABLE] = NO_CONFIG
    try:
        import submitit
    finally:
        if asked is None:
            del os.environ[SUBMITIT_LOG_VARIABLE]
        else:
            os.environ[SUBMITIT_LOG_VARIABLE] = asked
    level = (asked or "INFO").upper()
    if level != NO_CONFIG:
        _submitit_handlers(submitit.core.logger.CONFIG, int(level) if level.isdigit() else level)
    return submitit


def _submitit_handlers(config: dict, level: int | str) -> None:
    """What submitit's ``dictConfig(config)`` sets on its logger, without closing others'."""
    logger = logging.getLogger("submitit")
    formatter = logging.Formatter(config["formatters"]["submitit_basic"]["format"])
    for name in config["loggers"]["submitit"]["handlers"]:
        handler_config = config["handlers"][name]
        stream = sys.stdout if handler_config["stream"] == "ext://sys.stdout" else sys.stderr
        handler = logging.StreamHandler(stream)
        handler.setLevel(handler_config["level"])
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    logger.setLevel(level)


def log_path(log_dir: Path, job_id: str) -> Path:
    """A job's stderr log, as submitit names it (``<id>_0_log.err``)."""
    return Path(log_dir) / f"{job_id}_0_log.err"
