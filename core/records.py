"""Records that cross module boundaries: one profiled run and its timeline.

A `RunRecord` is exactly one row of the ``runs`` table; its field order is the
column order of the table and of CSV/Parquet exports, and its annotations are the
column types (``X | None``: the column may be NULL; `core.schema` reads them).
Memory is in bytes, times in seconds.

The knob columns up to schema 9 are spelled out where the table has them; a knob
a workload declares later (`core.workloads.KNOBS`) gets a nullable column of its
type appended after the last field (`with_knob_columns`), where the migration
that adds it (`core.schema`) puts it too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from core import targets, workloads

# killed: ended by a signal from outside memplan that the kernel does not count as an OOM kill.
STATUSES = ("ok", "oom", "timeout", "error", "skipped", "interrupted", "killed")


@dataclass(frozen=True)
class Sample:
    """One memory_profiler sample: seconds since the child started, resident bytes."""

    t_s: float
    rss_bytes: int


@dataclass(frozen=True)
class _RunRecordFields:
    """One sweep point, measured or not (``status`` says which)."""

    run_id: str
    sweep_id: str | None
    created_at: str  # ISO 8601, UTC
    status: str  # one of STATUSES
    message: str
    # workload: its name (`core.workloads`), then the columns its configuration is
    # stored in; a workload leaves the columns it has no use for None (an AlexNet run
    # has no depth, base_filters, levels or upsampling)
    workload: str
    depth: int | None
    height: int
    width: int
    batch_size: int
    base_filters: int | None
    levels: int | None
    in_channels: int
    classes: int
    precision: str
    upsampling: str | None
    # protocol
    steps: int
    seed: int
    repeat: int
    sample_interval_s: float | None
    timeout_s: float | None
    memory_limit_bytes: int | None
    estimate_bytes: int | None
    # measurements (None when the point did not run far enough to have them)
    peak_sampled_bytes: int | None
    peak_hwm_bytes: int | None
    baseline_bytes: int | None  # resident memory right after the framework import
    wall_s: float | None
    step_times_s: str  # JSON list of floats, one per training step
    step_hwm_bytes: str  # JSON list of ints: the child's VmHWM after each step
    # machine
    # (runs before schema 3 have no cpu_vendor, cpu_isa, usable_cores or intra_op_threads;
    # `core.profiles` groups runs by these facts)
    hostname: str | None
    cpu_vendor: str | None  # "Intel", "AMD", or the raw vendor_id
    cpu_model: str | None
    cpu_isa: str | None  # the best level oneDNN can use (`core.cpu_names.ISA_LEVELS`)
    cpu_cores: int | None  # CPUs in the machine
    usable_cores: int | None  # CPUs this process may run on (affinity)
    intra_op_threads: int | None  # TensorFlow's intra-op thread pool size (None: torch)
    total_ram_bytes: int | None
    os: str | None
    # software
    python_version: str | None
    tensorflow_version: str | None
    keras_version: str | None
    numpy_version: str | None
    onednn_enabled: bool | None
    # cluster (schema 4): the Slurm job that measured the run, None when measured locally
    slurm_job_id: str | None = None  # "1234", or "1234_5" for an array task
    slurm_cpus_per_task: int | None = None  # the job's --cpus-per-task
    # schema 5: the L3 cache size TensorFlow's kernels read (`core.machine.l3_cache_bytes`);
    # None for older runs and where it cannot be read
    l3_cache_bytes: int | None = None
    # schema 7: which generation of its model name the CPU is (/proc/cpuinfo "cpu family",
    # "model", "stepping"; `core.machine.cpu_generation`); None for older runs and off x86
    cpu_family: int | None = None
    cpu_model_number: int | None = None
    cpu_stepping: int | None = None
    # schema 8: the framework that trained the run (`core.frameworks`; "tensorflow" for every
    # older run) and its version (that of tensorflow_version for a TensorFlow run); torch's
    # intra-op threads, None for a TensorFlow run as intra_op_threads is None for a torch run
    framework: str = field(kw_only=True)
    framework_version: str = field(kw_only=True)
    torch_intra_op_threads: int | None = None
    # schema 9: which memory the run measured (`core.targets`: "host_ram" for every older
    # run, whose figures are the peaks above) and, for a GPU run, the device's facts and
    # its figures. A GPU run measured outside memplan leaves the host facts and protocol
    # settings above None (`core.targets.HOST_FACT_COLUMNS`); a host-RAM run has them all.
    memory_target: str = targets.HOST_RAM
    gpu_name: str | None = None
    gpu_total_bytes: int | None = None  # usable memory as the framework reports it
    gpu_compute_capability: str | None = None
    gpu_driver: str | None = None
    cuda_version: str | None = None
    cudnn_version: str | None = None
    alloc_conf: str | None = None  # PYTORCH_CUDA_ALLOC_CONF; "" is the allocator's default
    allocated_peak_bytes: int | None = None
    reserved_peak_bytes: int | None = None
    nvml_used_peak_bytes: int | None = None
    context_bytes: int | None = None  # the CUDA context alone
    samples: tuple[Sample, ...] = field(default=(), compare=False, repr=False)

    def row(self) -> dict[str, Any]:
        """The ``runs`` table row (the timeline goes to ``samples``)."""
        return {name: getattr(self, name) for name in RUN_COLUMNS}


def with_knob_columns(record: type, columns: tuple[str, ...]) -> type:
    """``record`` with a nullable field for each knob of ``columns``, after its own fields.

    What a new knob's ``runs`` column is: its name, its type or None, NULL by default.
    NULL is also what a run stored before the knob existed holds; it reads as the
    knob's default (`core.workloads.base.from_stored_columns`).
    """
    if not columns:
        return record
    added = [(name, workloads.KNOBS[name].kind | None, field(default=None)) for name in columns]
    extended = dataclasses.make_dataclass(record.__name__, added, bases=(record,), frozen=True)
    extended.__module__, extended.__doc__ = record.__module__, record.__doc__
    return extended


# The knob columns declared after schema 9, appended in declaration order; NULL in every
# run stored before its migration, which reads as the knob's default.
ADDED_KNOB_COLUMNS: tuple[str, ...] = tuple(
    name
    for name in workloads.KNOBS
    if name not in {f.name for f in dataclasses.fields(_RunRecordFields)}
)
RunRecord = with_knob_columns(_RunRecordFields, ADDED_KNOB_COLUMNS)
RunRecord.__name__ = RunRecord.__qualname__ = "RunRecord"

RUN_COLUMNS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(RunRecord) if f.name != "samples"
)
SAMPLE_COLUMNS: tuple[str, ...] = ("run_id", "t_s", "rss_bytes")


@dataclass(frozen=True)
class PeakBound:
    """An upper bound on a point's peak, bytes, and where it comes from, in words.

    What a sweep's pre-check compares with the memory limit when a fitted model
    covers the point (`modeling.guard`); the closed form with margins otherwise.
    """

    bound_bytes: int
    source: str  # e.g. "the symbolic model's upper bound (x1.06) for machine 9b59349f74"
