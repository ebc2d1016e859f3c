"""Profile one sweep point: a fresh child process, sampled by memory_profiler.

The parent never imports TensorFlow or torch. It starts `profiling.child` in its own
session, lets memory_profiler (or psutil alone, `profiling.sampler`) sample the child's
resident memory (children included) at a fixed interval, and on every sample enforces
the memory limit and the wall-clock timeout by killing the child's process group. Every
outcome — ok, oom, timeout, error, killed — comes back as a `RunRecord`; none
raises, except an interrupt (Ctrl-C, SIGTERM), which kills the child before it
propagates. The child dies with this process, even by ``kill -9``
(`profiling.processes.die_with_parent`).

A child ended by a signal nobody here sent is ``oom`` only when the kernel
counted an OOM kill meanwhile (`profiling.processes.oom_kills_since`); otherwise
it is ``killed`` (or ``error`` for a crash such as SIGSEGV), and a resumed
sweep measures it again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from core import workloads
from core.frameworks import DEFAULT_FRAMEWORK
from core.machine import (
    framework_facts,
    machine_info,
    onednn_enabled,
    read_proc_status_bytes,
    software_info,
)
from core.records import RunRecord, Sample
from core.units import format_gib
from core.workloads.base import WorkloadConfig
from profiling import gpu, processes
from profiling.sampler import memory_usage

REPO_ROOT = Path(__file__).resolve().parent.parent
_MIB = 2**20
# memory_profiler's default and the Dell paper's mprof setting.
DEFAULT_SAMPLE_INTERVAL_S = 0.1
# The peak keeps creeping for a few steps after the first (graph tracing, Adam's
# slots) and can jump ~10% as late as step 4-5; by step 6 it is within ~1% of
# its 12-step value (docs/steps.md has the evidence and the command).
DEFAULT_STEPS = 6
DEFAULT_TIMEOUT_S = 1800.0
# The framework columns the child reports itself (`profiling.child`, `profiling.gpu`): the
# version of what trained is the imported module's, which can differ from the package's
# metadata this process reads (the H200 image's torch: 2.11.0+cu130 imported, 2.11.0 in
# its metadata; read from the metadata, memplan's own H200 runs made a profile of their
# own beside the outside script's).
_CHILD_FRAMEWORK_FACTS = ("framework_version", "torch_intra_op_threads")
# How much of a failing child's stderr is kept in the run's message.
STDERR_TAIL_LINES = 15
STDERR_TAIL_CHARS = 8192


@dataclass(frozen=True)
class RunSettings:
    """How a point is measured (the same for every point of a sweep)."""

    memory_limit_bytes: int
    steps: int = DEFAULT_STEPS
    seed: int = 0
    sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S
    timeout_s: float = DEFAULT_TIMEOUT_S
    framework: str = DEFAULT_FRAMEWORK  # what trains the points (`core.frameworks`)
    device: str = gpu.CPU  # where: "cpu", or "cuda[:N]" (torch on a GPU, `profiling.gpu`)


class _Watchdog:
    """The stream memory_profiler writes each sample to.

    Parses ``MEM <MiB> <epoch>`` lines into `Sample`s and, on every sample,
    kills the child when it crosses the memory limit or the deadline.
    """

    def __init__(self, process: subprocess.Popen, settings: RunSettings, started_epoch: float):
        self.process = process
        self.settings = settings
        self.started_epoch = started_epoch
        self.samples: list[Sample] = []
        self.last_hwm_bytes: int | None = None
        self.killed_for: str | None = None
        self.kill_message = ""
        self._pending = ""

    def write(self, text: str) -> None:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "MEM":
                self._on_sample(float(parts[1]), float(parts[2]))

    def flush(self) -> None:  # memory_profiler flushes its stream every 50 lines
        pass

    def _on_sample(self, rss_mib: float, epoch: float) -> None:
        rss_bytes = round(rss_mib * _MIB)
        elapsed_s = epoch - self.started_epoch
        self.samples.append(Sample(t_s=round(elapsed_s, 4), rss_bytes=rss_bytes))
        self.last_hwm_bytes = (
            read_proc_status_bytes(self.process.pid, "VmHWM") or self.last_hwm_bytes
        )
        if self.killed_for:
            return
        if rss_bytes > self.settings.memory_limit_bytes:
            self.kill(
                "oom",
                f"resident memory {format_gib(rss_bytes)} crossed the limit of "
                f"{format_gib(self.settings.memory_limit_bytes)} after {elapsed_s:.1f} s; "
                "the child was killed",
            )
        elif elapsed_s > self.settings.timeout_s:
            self.kill(
                "timeout",
                f"still running after the {self.settings.timeout_s:g} s timeout; "
                "the child was killed",
            )

    def kill(self, reason: str, message: str) -> None:
        self.killed_for, self.kill_message = reason, message
        _kill_group(self.process)


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def tail_lines(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a text file ("" when there is none)."""
    text = path.read_text(errors="replace") if path.exists() else ""
    # Its end only: a stored message is bounded (`core.plausibility.MAX_MESSAGE_CHARS`).
    return "\n".join(text.strip().splitlines()[-lines:])[-STDERR_TAIL_CHARS:]


def _read_result(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def child_command(
    config: WorkloadConfig,
    settings: RunSettings,
    result_path: Path,
    parent_pid: int | None = None,
) -> list[str]:
    """The command line of the profiled child (run with ``cwd=REPO_ROOT``).

    parent_pid : the child stops on its own when this process is no longer its parent.
    """
    watch = ["--parent-pid", str(parent_pid)] if parent_pid else []
    watch += ["--device", settings.device] if settings.device != gpu.CPU else []
    return [
        sys.executable,
        "-m",
        "profiling.child",
        "--workload",
        config.workload,
        "--config",
        json.dumps(config.to_dict()),
        "--framework",
        settings.framework,
        "--steps",
        str(settings.steps),
        "--seed",
        str(settings.seed),
        "--result",
        str(result_path),
        *watch,
    ]


def run_point(
    config: WorkloadConfig,
    settings: RunSettings,
    *,
    sweep_id: str | None = None,
    repeat: int = 0,
    estimate_bytes: int | None = None,
) -> RunRecord:
    """Train ``config`` in a fresh child process and return what was measured."""
    with tempfile.TemporaryDirectory(prefix="memplan-run-") as tmp:
        result_path = Path(tmp) / "result.json"
        stderr_path = Path(tmp) / "stderr.txt"
        command = child_command(config, settings, result_path, parent_pid=os.getpid())
        # The child's own OOM-kill counter where the kernel lets us make it a cgroup;
        # the machine's counters only for the message (`profiling.processes`).
        cgroup = processes.ChildCgroup.create()
        oom_kills_before = cgroup.counts() if cgroup else {}
        machine_before = processes.oom_kill_counts()
        try:
            process, watchdog, wall_s = _watch_child(command, settings, stderr_path, cgroup)
            result = _read_result(result_path)
            oom_kills_after = cgroup.counts() if cgroup else {}
        finally:
            if cgroup:
                cgroup.remove()
        elsewhere = processes.oom_kills_since(machine_before, processes.oom_kill_counts())
        status, message = _classify(
            process.returncode, watchdog, stderr_path, oom_kills_before, oom_kills_after, elsewhere
        )
    if status == "ok" and result.get("device_status") == "oom":  # out of GPU memory
        status, message = "oom", result.get("device_message", "")
    samples = tuple(watchdog.samples)
    return _record(
        _Point(config, settings, sweep_id, repeat, estimate_bytes),
        status,
        message,
        peak_sampled_bytes=max((s.rss_bytes for s in samples), default=None),
        # The child's own last reading, or the parent's when the child was killed first.
        peak_hwm_bytes=max(
            filter(None, (result.get("peak_hwm_bytes"), watchdog.last_hwm_bytes)), default=None
        ),
        baseline_bytes=result.get("baseline_bytes"),
        wall_s=round(wall_s, 3),
        step_times_s=json.dumps([round(t, 4) for t in result.get("step_times_s", [])]),
        step_hwm_bytes=json.dumps(result.get("step_hwm_bytes", [])),
        onednn_enabled=result.get("onednn_enabled", onednn_enabled(config.precision)),
        # torch's own answer where the child got that far (`core.machine` reads its rule)
        **{key: result[key] for key in _CHILD_FRAMEWORK_FACTS if key in result},
        **gpu.device_columns(result),
        samples=samples,
    )


def _watch_child(
    command: list[str],
    settings: RunSettings,
    stderr_path: Path,
    cgroup: processes.ChildCgroup | None,
) -> tuple[subprocess.Popen, _Watchdog, float]:
    """Start the child, sample it until it ends; the process, its watchdog and wall seconds.

    Any exception here (Ctrl-C, SIGTERM) kills the child's whole group first.
    """
    with open(stderr_path, "wb") as stderr:
        started_epoch, started = time.time(), time.monotonic()
        # Own session: the child's group can be killed whole, and a Ctrl-C in
        # the terminal reaches only the parent, which then cleans up.
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=processes.child_preexec(cgroup),
        )
        watchdog = _Watchdog(process, settings, started_epoch)
        try:
            # NoSuchProcess: the child exited between memory_profiler's poll and a sample.
            with contextlib.suppress(psutil.NoSuchProcess):
                memory_usage()(
                    process,
                    interval=settings.sample_interval_s,
                    include_children=True,
                    stream=watchdog,
                )
            process.wait()
        except BaseException:
            _kill_group(process)
            process.wait()
            raise
        return process, watchdog, time.monotonic() - started


def _classify(
    returncode: int,
    watchdog: _Watchdog,
    stderr_path: Path,
    oom_kills_before: dict[str, int],
    oom_kills_after: dict[str, int],
    elsewhere: str | None,
) -> tuple[str, str]:
    if watchdog.killed_for:
        return watchdog.killed_for, watchdog.kill_message
    if returncode == 0:
        return "ok", ""
    tail = tail_lines(stderr_path, STDERR_TAIL_LINES)
    if returncode > 0:
        return "error", f"child exited with code {returncode}:\n{tail}"
    return classify_signal(-returncode, oom_kills_before, oom_kills_after, tail, elsewhere)


def classify_signal(
    number: int,
    oom_kills_before: dict[str, int],
    oom_kills_after: dict[str, int],
    tail: str = "",
    elsewhere: str | None = None,
) -> tuple[str, str]:
    """The status and message of a child ended by signal ``number`` that memplan did not send.

    ``oom_kills_before``/``_after`` are the child's own OOM-kill counters
    (`profiling.processes.ChildCgroup`; {} where the kernel offers none): only
    one of them moving makes a SIGKILL ``oom``. ``elsewhere`` says which of the
    machine's counters moved meanwhile; they count other processes too, so they
    are never evidence, only news in the message. A crash (SIGSEGV, SIGABRT, ...)
    is an ``error``; anything else is ``killed``.
    """
    name = processes.signal_name(number)
    if number == signal.SIGKILL:
        evidence = processes.oom_kills_since(oom_kills_before, oom_kills_after)
        if evidence:
            return "oom", f"killed by SIGKILL from the kernel's OOM killer ({evidence})"
    if number in processes.CRASH_SIGNALS:
        return "error", f"child died of {name} (signal {number}):\n{tail}"
    if number != signal.SIGKILL:
        kernel = "it is not how the kernel's OOM killer ends a process"
    elif oom_kills_after:
        kernel = f"the kernel counted no OOM kill meanwhile ({', '.join(oom_kills_after)})"
    else:
        kernel = (
            "the kernel offers no OOM-kill counter of the child's own here, so it is not "
            "taken for out of memory"
        )
    if number == signal.SIGKILL and elsewhere:
        kernel += f" (the machine's counters moved, for some process: {elsewhere})"
    return "killed", (
        f"killed by {name} (signal {number}) from outside memplan; {kernel}. "
        "A resumed sweep measures this point again"
    )


def skipped_record(
    config: WorkloadConfig,
    settings: RunSettings,
    reason: str,
    *,
    sweep_id: str | None,
    repeat: int,
    estimate_bytes: int | None,
) -> RunRecord:
    """The record of a point that was never launched (it could not fit)."""
    return _record(
        _Point(config, settings, sweep_id, repeat, estimate_bytes),
        "skipped",
        reason,
        peak_sampled_bytes=None,
        peak_hwm_bytes=None,
        baseline_bytes=None,
        wall_s=None,
        step_times_s="[]",
        step_hwm_bytes="[]",
        onednn_enabled=onednn_enabled(config.precision),
    )


@dataclass(frozen=True)
class _Point:
    """Which point of which sweep a record is of."""

    config: WorkloadConfig
    settings: RunSettings
    sweep_id: str | None
    repeat: int
    estimate_bytes: int | None


def _record(point: _Point, status: str, message: str, **measured: Any) -> RunRecord:
    """The record of ``point``; ``measured``: the figures of the run, as RunRecord's own
    keyword columns (one call site per way a run ends, each naming every column it fills)."""
    config, settings = point.config, point.settings
    return RunRecord(
        run_id=uuid.uuid4().hex,
        sweep_id=point.sweep_id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),  # as core.store.now_iso
        status=status,
        message=message,
        **workloads.config_columns(config),
        steps=settings.steps,
        seed=settings.seed,
        repeat=point.repeat,
        sample_interval_s=settings.sample_interval_s,
        timeout_s=settings.timeout_s,
        memory_limit_bytes=settings.memory_limit_bytes,
        estimate_bytes=point.estimate_bytes,
        # what the child reported of its framework wins over this process's reading
        **(machine_info() | software_info() | framework_facts(settings.framework) | measured),
    )
