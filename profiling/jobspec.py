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
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import frameworks
from core.errors import ConfigError
from core.frameworks import DEFAULT_FRAMEWORK
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
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{WHAT}: not JSON ({error})") from None
        return cls.from_dict(values)

    @classmethod
    def from_dict(cls, values: Any) -> SweepJob:
        if not isinstance(values, dict):
            raise ConfigError(f"{WHAT}: must be a JSON object, got {type(values).__name__}")
        checked = _checked(values, _FIELDS, WHAT, required=("db_path", "grid"))
        return cls(**checked)


# --- checking one field ----------------------------------------------------------------


def _refuse(name: str, value: Any, wanted: str) -> ConfigError:
    return ConfigError(f"{WHAT}: {name} must be {wanted}, got {value!r}")


def _whole(least: int, most: int | None = None) -> Callable[[str, Any], int]:
    wanted = f"a whole number from {least}" + (f" to {most}" if most is not None else " up")

    def check(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _refuse(name, value, wanted)
        if value < least or (most is not None and value > most):
            raise _refuse(name, value, wanted)
        return value

    return check


def _number(least: float, above: bool = True) -> Callable[[str, Any], float]:
    wanted = f"a number {'above' if above else 'of at least'} {least:g}"

    def check(name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _refuse(name, value, wanted)
        if not math.isfinite(value) or value < least or (above and value == least):
            raise _refuse(name, value, wanted)
        return float(value)

    return check


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _refuse(name, value, "true or false")
    return value


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _refuse(name, value, "text")
    return value


def _named(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _refuse(name, value, "a name (text, not blank)")
    return value


def _path(name: str, value: Any) -> Path:
    return Path(_named(name, value))


def _framework(name: str, value: Any) -> str:
    if value not in frameworks.FRAMEWORKS:
        raise _refuse(name, value, f"one of {', '.join(frameworks.FRAMEWORKS)}")
    return value


def _device(name: str, value: Any) -> str:
    try:
        gpu.parse_device(_named(name, value))
    except ConfigError:
        raise _refuse(name, value, "cpu, cuda or cuda:N") from None
    return value


def _optional(check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    return lambda name, value: None if value is None else check(name, value)


def _grid(name: str, value: Any) -> Grid:
    if not isinstance(value, dict):
        raise _refuse(name, value, "an object of lists (workload, image_sizes, batch_sizes, ...)")
    try:
        return grid_from_mapping(value)
    except ConfigError as error:
        raise ConfigError(f"{WHAT}: {name}: {error}") from None


def _slurm(name: str, value: Any) -> SlurmOptions:
    if not isinstance(value, dict):
        raise _refuse(name, value, "an object (partition, account, max_parallel, ...)")
    options = SlurmOptions(**_checked(value, _SLURM_FIELDS, f"{WHAT}: {name}", ("partition",)))
    try:
        check_options(options)
    except ConfigError as error:
        raise ConfigError(f"{WHAT}: {name}: {error}") from None
    return options


def _checked(
    values: dict[str, Any],
    checks: dict[str, Callable[[str, Any], Any]],
    what: str,
    required: tuple[str, ...],
) -> dict[str, Any]:
    """``values`` with each field checked; `ConfigError` for an unknown or missing key."""
    unknown = sorted(set(values) - set(checks))
    if unknown:
        raise ConfigError(
            f"{what}: unknown key(s) {', '.join(unknown)}; known: {', '.join(checks)}"
        )
    missing = [name for name in required if name not in values]
    if missing:
        raise ConfigError(f"{what}: missing {', '.join(missing)}")
    prefix = "" if what == WHAT else f"{what.removeprefix(WHAT + ': ')}."
    return {name: checks[name](prefix + name, value) for name, value in values.items()}


_FIELDS: dict[str, Callable[[str, Any], Any]] = {
    "db_path": _path,
    "grid": _grid,
    "framework": _framework,
    "steps": _whole(1),
    "memory_limit_bytes": _optional(_whole(MIN_MEMORY_LIMIT_BYTES, MAX_MEMORY_BYTES)),
    "seed": _whole(0, MAX_SEED),
    "sample_interval_s": _number(0),
    "timeout_s": _number(0),
    "repeats": _whole(1, MAX_REPEATS),
    "resume": _flag,
    "run_over_bound": _flag,
    "show_progress": _flag,
    "slurm": _optional(_slurm),
    "machine": _optional(_named),
    "origin": _text,
    "device": _device,
}
_SLURM_FIELDS: dict[str, Callable[[str, Any], Any]] = {
    "partition": _named,
    "account": _optional(_named),
    "max_parallel": _whole(1),
    "cpus_per_task": _whole(1),
    "mem_margin": _number(0, above=False),
    "mem_bytes": _optional(_whole(1, MAX_MEMORY_BYTES)),
    "work_dir": _optional(_path),
    "poll_s": _number(0),
}
