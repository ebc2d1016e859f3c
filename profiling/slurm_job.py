"""What runs inside a Slurm job: one sweep point, measured as a local sweep measures it.

`profiling.cluster_sweep` writes a point file (`PointSpec` as JSON) into the
sweep's work directory and submits `measure` through submitit; on the node,
`measure` reads the point file, writes the node's machine facts at once (so even
a job that dies later is recorded against the machine it ran on), runs the point
with `profiling.runner.run_point` (the same fresh child, sampler and
kill-on-limit watchdog as a local sweep) and writes the record as JSON beside
them, atomically. It never opens the database: the submitter ingests the file,
so DuckDB keeps its single writer.

Only JSON crosses between submitter and job here; the submitter never unpickles
what a job returns.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import workloads
from core.frameworks import DEFAULT_FRAMEWORK, TORCH
from core.machine import framework_facts, machine_info, software_info
from profiling import pending
from profiling.runner import RunSettings, run_point

# Environment variables Slurm sets in a job (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES").
_JOB_ID = "SLURM_JOB_ID"
_ARRAY_JOB_ID = "SLURM_ARRAY_JOB_ID"
_ARRAY_TASK_ID = "SLURM_ARRAY_TASK_ID"
_CPUS_PER_TASK = "SLURM_CPUS_PER_TASK"
# TensorFlow sizes its intra-op pool from this (`core.machine` records it): without
# it the child would start one thread per CPU of the node, not of the allocation.
_INTRA_OP_THREADS = "TF_NUM_INTRAOP_THREADS"
# torch sizes its pool from this, one thread per physical core of the node without it
# (`core.machine.torch_intra_op_threads`); set for a torch run only.
_TORCH_THREADS = "OMP_NUM_THREADS"


@dataclass(frozen=True)
class PointSpec:
    """One point of a cluster sweep, as the job reads it from its point file."""

    point_id: str
    run_id: str
    workload: str
    config: dict[str, Any]
    repeat: int
    estimate_bytes: int
    settings: dict[str, Any]  # a `RunSettings`, memory_limit_bytes = the job's --mem

    def write(self, path: Path) -> None:
        pending.write_atomically(path, json.dumps(dataclasses.asdict(self)))

    @classmethod
    def read(cls, path: Path) -> PointSpec:
        values = json.loads(Path(path).read_text())
        return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls)})


def result_path(points_dir: Path, point_id: str) -> Path:
    """Where the job writes its record (`profiling.pending`'s JSON)."""
    return Path(points_dir) / f"{point_id}.result.json"


def node_path(points_dir: Path, point_id: str) -> Path:
    """Where the job writes the node's machine facts as soon as it starts."""
    return Path(points_dir) / f"{point_id}.node.json"


def spec_path(points_dir: Path, point_id: str) -> Path:
    return Path(points_dir) / f"{point_id}.json"


def slurm_job_id(environ: dict[str, str] | None = None) -> str | None:
    """``1234`` for a plain job, ``1234_5`` for task 5 of array job 1234 (as squeue shows it)."""
    environ = os.environ if environ is None else environ
    if environ.get(_ARRAY_JOB_ID) and environ.get(_ARRAY_TASK_ID):
        return f"{environ[_ARRAY_JOB_ID]}_{environ[_ARRAY_TASK_ID]}"
    return environ.get(_JOB_ID)


def cpus_per_task(environ: dict[str, str] | None = None) -> int | None:
    environ = os.environ if environ is None else environ
    value = environ.get(_CPUS_PER_TASK)
    return int(value) if value and value.isdigit() else None


def node_facts(framework: str = DEFAULT_FRAMEWORK) -> dict[str, Any]:
    """The machine, software and framework columns of a ``framework`` run measured here."""
    return {**machine_info(), **software_info(), **framework_facts(framework)}


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def measure(point_file: str) -> str:
    """Measure the point in ``point_file``; the path of the record written. Runs on the node."""
    path = Path(point_file)
    spec = PointSpec.read(path)
    settings = RunSettings(**spec.settings)
    cpus = cpus_per_task()
    if cpus:
        os.environ.setdefault(_INTRA_OP_THREADS, str(cpus))
        if settings.framework == TORCH:
            os.environ.setdefault(_TORCH_THREADS, str(cpus))
    job_id = slurm_job_id()
    facts = node_facts(settings.framework)
    pending.write_atomically(
        node_path(path.parent, spec.point_id),
        json.dumps({**facts, "slurm_job_id": job_id, "slurm_cpus_per_task": cpus}),
    )
    # scancel and the time limit send SIGTERM: kill the child and write nothing; the
    # submitter reads the job's end (CANCELLED, TIMEOUT, ...) from Slurm instead.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    workload = workloads.get(spec.workload)
    config = workload.Config.from_dict(spec.config)
    record = run_point(
        config,
        settings,
        repeat=spec.repeat,
        estimate_bytes=spec.estimate_bytes,
    )
    record = dataclasses.replace(
        record,
        run_id=spec.run_id,
        slurm_job_id=job_id,
        slurm_cpus_per_task=cpus,
    )
    out = result_path(path.parent, spec.point_id)
    pending.write_atomically(out, pending.to_json(record))
    return str(out)
