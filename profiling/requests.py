"""A sweep as typed in a form, checked: `parse_request` turns text boxes into a `SweepRequest`.

No Streamlit here: the dashboard's sidebar passes what its boxes say, and gets
back either a request (`application.sweep_job.launch` starts its `SweepRequest.job`)
or a `ConfigError` saying what is wrong and what would be right. Every point of the grid is
validated, so a grid that would fail never starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from core import workloads
from core.errors import ConfigError
from core.frameworks import DEFAULT_FRAMEWORK
from core.units import check_memory_limit, parse_bytes
from core.workloads import DEFAULT_WORKLOAD
from profiling.jobspec import SweepJob
from profiling.slurm_points import SlurmOptions
from profiling.sweep import Grid, expand_grid, grid_from_mapping


@dataclass(frozen=True)
class SweepRequest:
    """A validated sweep to launch: its grid, steps per point, per-child memory limit and
    the framework that trains its points."""

    grid: Grid
    steps: int
    memory_limit_bytes: int
    points: int  # configurations in the grid
    # Launch points whose bound exceeds the limit and let the limit stop them (verifying a
    # sizing answer's next size up: `application.verify`).
    run_over_bound: bool = False
    framework: str = DEFAULT_FRAMEWORK  # `core.frameworks`

    def job(self, db_path: Path, target: SlurmOptions | None = None) -> SweepJob:
        """The sweep job of this request against ``db_path``, on this machine (``target``
        None) or on Slurm, where each job's ``--mem`` is the limit instead of the request's."""
        return SweepJob(
            db_path=db_path,
            grid=self.grid,
            framework=self.framework,
            steps=self.steps,
            memory_limit_bytes=self.memory_limit_bytes if target is None else None,
            run_over_bound=self.run_over_bound,
            slurm=target,
        )


def _words(text: str) -> list[str]:
    return text.replace(",", " ").split()


def _whole_numbers(label: str, text: str, example: str) -> list[int]:
    words = _words(text)
    if not words:
        raise ConfigError(f"{label}: give at least one, e.g. {example}")
    numbers = []
    for word in words:
        try:
            numbers.append(int(word))
        except ValueError:
            raise ConfigError(
                f"{label}: {word!r} is not a whole number; give numbers separated by spaces, "
                f"e.g. {example}"
            ) from None
    return list(dict.fromkeys(numbers))


def parse_request(
    image_sizes: str,
    batch_sizes: str,
    knob_texts: Mapping[str, str],
    steps: int,
    memory_limit: str,
    workload: str = DEFAULT_WORKLOAD,
) -> SweepRequest:
    """Check a sweep as typed in a form; raise `ConfigError` saying what is wrong and what is right.

    Sizes are separated by spaces or commas (``"32 64 96x96x64"``); the memory
    limit takes the CLI's units (``"12GiB"``); ``knob_texts`` holds the form's
    knob boxes by knob name (``{"base_filters": "8 16"}``, the workload's
    ``LABELS.form_knobs``). Every point of the grid is validated, so a grid that
    would fail never starts. A knob box may be blank for a workload without that knob.
    """
    sizes = list(dict.fromkeys(_words(image_sizes)))
    if not sizes:
        raise ConfigError("Image sizes: give at least one, e.g. 32 64 96x96x64")
    batches = _whole_numbers("Batch sizes", batch_sizes, "1 2 4")
    own = workloads.get(workload).NETWORK_KNOBS
    knobs = {
        workloads.KNOBS[name].sweep_key: _knob_values(name, text)
        for name, text in knob_texts.items()
        if text.strip() or name in own
    }
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ConfigError(f"Steps: must be a whole number of at least 1, got {steps!r}")
    if not memory_limit.strip():
        raise ConfigError("Memory limit: give the most one point may use, e.g. 12GiB")
    try:
        limit_bytes = check_memory_limit(parse_bytes(memory_limit))
    except (argparse.ArgumentTypeError, ConfigError) as error:
        raise ConfigError(f"Memory limit: {error}") from None
    grid = grid_from_mapping(
        {"workload": workload, "image_sizes": sizes, "batch_sizes": batches, **knobs}
    )
    points = len(expand_grid(grid))
    return SweepRequest(grid=grid, steps=steps, memory_limit_bytes=limit_bytes, points=points)


def _knob_values(name: str, text: str) -> list:
    """The values typed in knob ``name``'s box, as its type; `ConfigError` for none."""
    knob = workloads.KNOBS.get(name)
    if knob is None:
        raise ConfigError(f"no workload has a knob {name!r}; knobs: {', '.join(workloads.KNOBS)}")
    if knob.kind is int:
        return _whole_numbers(knob.label, text, str(knob.default))
    words = list(dict.fromkeys(_words(text)))
    if not words:
        raise ConfigError(f"{knob.label}: give at least one, e.g. {knob.default}")
    return words


def memory_limit_text(limit_bytes: int) -> str:
    """``limit_bytes`` as the form shows it, rounded down to 0.1 GiB (never above the limit)."""
    tenths = limit_bytes * 10 // 2**30
    return f"{tenths / 10:.1f}GiB"
