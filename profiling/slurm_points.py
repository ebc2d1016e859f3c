"""A Slurm sweep's points: its options, each point's job memory and identity, and its records.

What `profiling.cluster_sweep` drives: the options a cluster sweep takes
(`SlurmOptions`, checked by `check_options`), each point with what the work
directory and the database already know of it (`plan_points`: its stable id, run
id and job ids, its ``--mem``), and the record of a point whose job left none
(`unmeasured_record`: the node's own facts where the job wrote them and they pass
an import's checks, else what ``sinfo`` says of the partition).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import datafiles, profiles, store, workloads
from core.errors import ConfigError, DataFileError
from core.frameworks import DEFAULT_FRAMEWORK
from core.records import PeakBound, RunRecord
from core.units import MIN_MEMORY_LIMIT_BYTES, format_bytes
from core.workloads.base import WorkloadConfig, format_image_shape
from profiling import pending, slurm, slurm_job
from profiling.runner import RunSettings, skipped_record

# --mem is the point's bound plus this share (the closed form already has margins of its
# own, a fitted bound its conformal ratio; this covers what else the job is charged for,
# such as page cache).
DEFAULT_MEM_MARGIN = 0.10
# The reference machines have 2 cores; --cpus-per-task is recorded with every run.
DEFAULT_CPUS_PER_TASK = 2
DEFAULT_MAX_PARALLEL = 8
DEFAULT_POLL_S = 5.0
# The most --mem-margin may be: ten times the bound, a share far past any bound's error.
MAX_MEM_MARGIN = 10
_MIB = 2**20
# The job's own Python (submitit, the runner, memory_profiler: 170 MiB of high-water mark,
# measured with `python -c "import resource, profiling.slurm_job, submitit;
# print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"` on an AVX2 AMD EPYC, 2 cores) counts
# against --mem too: the child's limit leaves it this much, so memplan's watchdog, which
# keeps the timeline, stops a point before Slurm kills the whole job.
JOB_PROCESS_ALLOWANCE_BYTES = 256 * 2**20
# A --mem from the estimate is rounded up to whole GiB, so that points of similar size
# ask for the same and go into one job array.
MEM_STEP_BYTES = 2**30
# Stored runs that end a point; any other stored status is measured again (as locally).
DONE_STATUSES = ("ok", "oom")

QUEUED, RUNNING, DONE, NEW = "queued", "running", "done", "new"


@dataclass(frozen=True)
class SlurmOptions:
    """Where and how a cluster sweep's jobs run."""

    partition: str
    account: str | None = None
    max_parallel: int = DEFAULT_MAX_PARALLEL
    cpus_per_task: int = DEFAULT_CPUS_PER_TASK
    mem_margin: float = DEFAULT_MEM_MARGIN
    mem_bytes: int | None = None  # one --mem for every point instead of estimate + margin
    work_dir: Path | None = None  # default: beside the database, <stem>.slurm
    poll_s: float = DEFAULT_POLL_S

    def describe(self) -> str:
        account = f", account {self.account}" if self.account else ""
        return f"Slurm partition {self.partition}{account}"


def check_options(options: SlurmOptions) -> None:
    """Refuse options no job could run with (`ConfigError` naming each and what would do)."""
    problems = []
    least_mem = JOB_PROCESS_ALLOWANCE_BYTES + MIN_MEMORY_LIMIT_BYTES
    if options.mem_bytes is not None and options.mem_bytes < least_mem:
        problems.append(
            f"--mem {format_bytes(options.mem_bytes)} is too small: the job's own Python takes "
            f"{JOB_PROCESS_ALLOWANCE_BYTES // _MIB} MiB and a point at least "
            f"{MIN_MEMORY_LIMIT_BYTES // _MIB} MiB more; give at least {least_mem // _MIB}MiB"
        )
    if options.max_parallel < 1:
        problems.append(f"--max-parallel must be at least 1, got {options.max_parallel}")
    if options.cpus_per_task < 1:
        problems.append(f"--cpus-per-task must be at least 1, got {options.cpus_per_task}")
    if not 0 <= options.mem_margin <= MAX_MEM_MARGIN:
        problems.append(
            f"--mem-margin must be from 0 to {MAX_MEM_MARGIN} (a share), got {options.mem_margin}"
        )
    if not options.partition.strip():
        problems.append("--partition is empty: name the Slurm partition to run on (see `sinfo`)")
    if problems:
        raise ConfigError("; ".join(problems))


@dataclass
class ClusterPoint:
    """One point of the sweep and how far it has got (mutable: the loop moves it along)."""

    point_id: str
    config: WorkloadConfig
    repeat: int
    bound: PeakBound  # what the point is expected to need at most, and whose word that is
    mem_bytes: int
    run_id: str
    jobs: list[str]
    state: str = NEW
    ended_at: float | None = None  # when Slurm first said the job ended, with no record yet
    missing_at: float | None = None  # when Slurm first did not know the job

    @property
    def label(self) -> str:
        return f"{format_image_shape(self.config.image_shape)} batch {self.config.batch_size}"

    @property
    def job_id(self) -> str | None:
        return self.jobs[-1] if self.jobs else None

    def manifest_entry(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "jobs": self.jobs}


def mem_request_bytes(bound: PeakBound, options: SlurmOptions) -> int:
    """The ``--mem`` of a point: the flag's figure (whole MiB), or its bound plus the margin."""
    if options.mem_bytes:
        return math.ceil(options.mem_bytes / _MIB) * _MIB
    wanted = bound.bound_bytes * (1 + options.mem_margin)
    return math.ceil(wanted / MEM_STEP_BYTES) * MEM_STEP_BYTES


def point_id(config: WorkloadConfig, settings: RunSettings, repeat: int) -> str:
    """The same point of the same protocol gets the same id in every run of the command."""
    key = {
        **workloads.config_columns(config),
        "steps": settings.steps,
        "seed": settings.seed,
        "repeat": repeat,
    }
    if settings.framework != DEFAULT_FRAMEWORK:  # a TensorFlow point keeps the id it had
        key["framework"] = settings.framework
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def settings_for(point: ClusterPoint, settings: RunSettings) -> RunSettings:
    """The protocol of the sweep with the child's memory limit inside the job's --mem."""
    limit = max(_MIB, point.mem_bytes - JOB_PROCESS_ALLOWANCE_BYTES)
    return dataclasses.replace(settings, memory_limit_bytes=limit)


@dataclass(frozen=True)
class PlanInputs:
    """What `plan_points` needs: the sweep's points and protocol, and what is known already."""

    db_path: Path
    bounds: Mapping[WorkloadConfig, PeakBound]
    repeats: int
    settings: RunSettings
    options: SlurmOptions
    manifest: Mapping[str, Any]
    resume: bool


def plan_points(inputs: PlanInputs) -> tuple[list[ClusterPoint], int]:
    """Every point, with what the work directory and the database already know of it.

    Returns the points and how many of them the database already has measured.
    """
    points = []
    for config, bound in inputs.bounds.items():
        for repeat in range(inputs.repeats):
            pid = point_id(config, inputs.settings, repeat)
            known = inputs.manifest["points"].get(pid) if inputs.resume else None
            points.append(
                ClusterPoint(
                    point_id=pid,
                    config=config,
                    repeat=repeat,
                    bound=bound,
                    mem_bytes=mem_request_bytes(bound, inputs.options),
                    run_id=str(known["run_id"]) if known else uuid.uuid4().hex,
                    jobs=[str(job) for job in known["jobs"]] if known else [],
                )
            )
    stored = store.run_statuses(inputs.db_path, [p.run_id for p in points])
    already = 0
    for point in points:
        status = stored.get(point.run_id)
        if status in DONE_STATUSES:
            point.state = DONE
            already += 1
        elif status is not None:  # stored, but measured again (interrupted, error, ...)
            point.run_id, point.jobs = uuid.uuid4().hex, []
        elif point.jobs:
            point.state = QUEUED  # its job may still run, or have left a record: polled first
    return points, already


# What a job's node.json may fill in a run: the node's machine and software facts and the
# job's Slurm figures (`profiling.slurm_job.measure` writes these, and the framework, which
# the point's settings decide), never a measurement, the configuration or how the run ended.
NODE_COLUMNS = (
    "hostname",
    "cpu_vendor",
    "cpu_model",
    "cpu_isa",
    "cpu_cores",
    "usable_cores",
    "intra_op_threads",
    "total_ram_bytes",
    "os",
    "l3_cache_bytes",
    "python_version",
    "tensorflow_version",
    "keras_version",
    "numpy_version",
    "framework_version",
    "torch_intra_op_threads",
    "slurm_job_id",
    "slurm_cpus_per_task",
)


def _partition_facts(point: ClusterPoint, partition: slurm.Partition) -> dict[str, Any]:
    """What ``sinfo`` says of the partition, with the CPU unknown (never fitted, no profile)."""
    return {
        "hostname": f"slurm:{partition.name}",
        "cpu_vendor": None,
        "cpu_model": profiles.UNKNOWN,
        "cpu_isa": None,
        "cpu_cores": partition.max_cpus,
        "usable_cores": None,
        "intra_op_threads": None,
        "torch_intra_op_threads": None,
        "total_ram_bytes": partition.max_memory_bytes,
        "l3_cache_bytes": None,
        "slurm_job_id": point.job_id,
    }


def _node_facts(path: Path) -> dict[str, Any]:
    """The node columns of a job's node.json; `DataFileError` if it is not an object of them."""
    try:
        facts = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as error:
        raise DataFileError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(facts, dict):
        raise DataFileError(f"{path}: a {type(facts).__name__}, not an object of node facts")
    return {name: facts[name] for name in NODE_COLUMNS if name in facts}


@dataclass(frozen=True)
class Unmeasured:
    """How a point's job ended without a record, and where the sweep keeps its files."""

    status: str
    message: str
    sweep_id: str
    points_dir: Path
    partition: slurm.Partition


def unmeasured_record(point: ClusterPoint, ended: Unmeasured, settings: RunSettings) -> RunRecord:
    """The run of a point whose job left no record, with the machine it ran on.

    The node's own facts when the job got as far as writing them and they pass
    the checks an import makes; else (the file moved aside, named on stderr)
    what ``sinfo`` says of the partition.
    """
    base = skipped_record(
        point.config,
        settings_for(point, settings),
        ended.message,
        sweep_id=ended.sweep_id,
        repeat=point.repeat,
        estimate_bytes=point.bound.bound_bytes,
    )
    own = {"run_id": point.run_id, "status": ended.status}
    record = dataclasses.replace(base, **_partition_facts(point, ended.partition), **own)
    path = slurm_job.node_path(ended.points_dir, point.point_id)
    if not path.exists():
        return record
    try:
        facts = _node_facts(path)
        from_node = dataclasses.replace(record, **facts)
        datafiles.check_record(path, from_node.row(), [])
    except (DataFileError, TypeError) as error:
        pending.quarantine(path, str(error))
        return record
    return from_node
