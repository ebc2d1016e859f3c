"""A sweep as a typed job: what `memplan sweep` and a launched sweep both run.

`SweepJob` names everything a sweep needs — the database, the grid, how each
point is measured, where it runs (this machine, or Slurm jobs) and what the
sweeps table records as its origin — and crosses between processes as JSON
(`SweepJob.to_json` / `SweepJob.from_json`). Reading checks every field: an
unknown key, a wrong type or a value out of range is one `ConfigError` naming
the field and what it takes. `profiling.sweep_job.run` runs a job; nobody
builds a command line for it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import frameworks
from core.errors import ConfigError
from core.frameworks import DEFAULT_FRAMEWORK
from core.jobfields import Check, Fields, optional
from core.plausibility import MAX_MEMORY_BYTES, MAX_SEED
from core.units import MIN_MEMORY_LIMIT_BYTES, check_memory_limit
from profiling import gpu
from profiling.runner import (
    DEFAULT_SAMPLE_INTERVAL_S,
    DEFAULT_STEPS,
    DEFAULT_TIMEOUT_S,
    RunSettings,
)
from profiling.slurm_points import SlurmOptions, check_options
from profiling.sweep import MAX_REPEATS, Grid, default_memory_limit_bytes, grid_from_mapping

# How a message names the thing it refuses.
WHAT = "sweep job"


@dataclass(frozen=True)
class SweepJob:
    """One sweep, fully specified; ``memory_limit_bytes`` None: this machine's default."""

    db_path: Path
    grid: Grid
    framework: str = DEFAULT_FRAMEWORK
    steps: int = DEFAULT_STEPS
    memory_limit_bytes: int | None = None  # always None on Slurm: a job's --mem limits it
    seed: int = 0
    sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S
    timeout_s: float = DEFAULT_TIMEOUT_S
    repeats: int = 1
    resume: bool = True
    # Launch points whose bound exceeds the limit and let the limit stop them (verifying).
    run_over_bound: bool = False
    show_progress: bool = True
    slurm: SlurmOptions | None = None  # None: the points run on this machine
    machine: str | None = None  # Slurm only: the nodes' machine profile, for their bounds
    origin: str = ""  # what the sweeps table records as the sweep's command
    device: str = gpu.CPU  # "cuda[:N]": torch on that GPU (`profiling.gpu`), this machine only

    def __post_init__(self) -> None:
        if self.device != gpu.CPU and self.slurm is not None:
            raise ConfigError(f"{WHAT}: device {self.device} is for a sweep on this machine")
        if self.slurm is None:
            if self.machine is not None:
                raise ConfigError(
                    f"{WHAT}: machine is for Slurm sweeps (a sweep on this machine uses this "
                    "machine's fitted models)"
                )
            return
        clashes = [
            ("memory_limit_bytes", self.memory_limit_bytes is not None, "each job's --mem"),
            ("run_over_bound", self.run_over_bound, "each job asks for what its point needs"),
        ]
        for name, clash, why in clashes:
            if clash:
                raise ConfigError(f"{WHAT}: {name} is for this machine, not Slurm ({why})")

    def settings(self) -> RunSettings:
        """How each point is measured; `ConfigError` for a framework this Python lacks, or a
        memory limit above this machine's RAM."""
        frameworks.check_installed(self.framework)
        limit = self.memory_limit_bytes
        if limit is not None and self.slurm is None:
            check_memory_limit(limit)
        return RunSettings(
            memory_limit_bytes=limit or default_memory_limit_bytes(),
            steps=self.steps,
            seed=self.seed,
            sample_interval_s=self.sample_interval_s,
            timeout_s=self.timeout_s,
            framework=self.framework,
            device=self.device,
        )

    def to_dict(self) -> dict[str, Any]:
        values = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        values["db_path"] = str(self.db_path)
        values["grid"] = self.grid.to_dict()
        if self.slurm is not None:
            slurm = dataclasses.asdict(self.slurm)
            slurm["work_dir"] = None if self.slurm.work_dir is None else str(self.slurm.work_dir)
            values["slurm"] = slurm
        return values

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> SweepJob:
        """The job ``text`` holds; `ConfigError` naming the first field that is wrong."""
        return cls.from_dict(FIELDS.read(text))

    @classmethod
    def from_dict(cls, values: Any) -> SweepJob:
        checked = FIELDS.checked(FIELDS.object_of(values), _FIELDS, ("db_path", "grid"))
        return cls(**checked)


# --- checking one field (`core.jobfields`) ---------------------------------------------

FIELDS = Fields(WHAT)


def _device(name: str, value: Any) -> str:
    try:
        gpu.parse_device(FIELDS.named(name, value))
    except ConfigError:
        raise FIELDS.refuse(name, value, "cpu, cuda or cuda:N") from None
    return value


def _grid(name: str, value: Any) -> Grid:
    if not isinstance(value, dict):
        raise FIELDS.refuse(
            name, value, "an object of lists (workload, image_sizes, batch_sizes, ...)"
        )
    try:
        return grid_from_mapping(value)
    except ConfigError as error:
        raise ConfigError(f"{WHAT}: {name}: {error}") from None


def _slurm(name: str, value: Any) -> SlurmOptions:
    if not isinstance(value, dict):
        raise FIELDS.refuse(name, value, "an object (partition, account, max_parallel, ...)")
    options = SlurmOptions(**FIELDS.checked(value, _SLURM_FIELDS, ("partition",), within=name))
    try:
        check_options(options)
    except ConfigError as error:
        raise ConfigError(f"{WHAT}: {name}: {error}") from None
    return options


_FIELDS: dict[str, Check] = {
    "db_path": FIELDS.path,
    "grid": _grid,
    "framework": FIELDS.choice(lambda: frameworks.FRAMEWORKS),
    "steps": FIELDS.whole(1),
    "memory_limit_bytes": optional(FIELDS.whole(MIN_MEMORY_LIMIT_BYTES, MAX_MEMORY_BYTES)),
    "seed": FIELDS.whole(0, MAX_SEED),
    "sample_interval_s": FIELDS.number(0),
    "timeout_s": FIELDS.number(0),
    "repeats": FIELDS.whole(1, MAX_REPEATS),
    "resume": FIELDS.flag,
    "run_over_bound": FIELDS.flag,
    "show_progress": FIELDS.flag,
    "slurm": optional(_slurm),
    "machine": optional(FIELDS.named),
    "origin": FIELDS.text,
    "device": _device,
}
_SLURM_FIELDS: dict[str, Check] = {
    "partition": FIELDS.named,
    "account": optional(FIELDS.named),
    "max_parallel": FIELDS.whole(1),
    "cpus_per_task": FIELDS.whole(1),
    "mem_margin": FIELDS.number(0, above=False),
    "mem_bytes": optional(FIELDS.whole(1, MAX_MEMORY_BYTES)),
    "work_dir": optional(FIELDS.path),
    "poll_s": FIELDS.number(0),
}
