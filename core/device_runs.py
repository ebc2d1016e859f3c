"""GPU training runs as one JSON object a line: each line read, checked and typed.

The GPU runs memplan bundles were measured on memplan's own PyTorch networks by
an outside script (shared ``gpu/measure.py``: allocator peaks from
``torch.cuda.max_memory_allocated`` / ``max_memory_reserved``, the device's used
memory from NVML, the device's facts); memplan's own GPU child records the same
fields. This module is the one reader of such lines: a line becomes a `GpuRun`
(the configuration, the device figures, the `GpuDevice` it ran on) or a
`DataFileError` naming the line and the field, with what would be right.

What a line must hold (field names as the lines carry them):

* ``workload``, ``shape``, ``batch``, ``precision`` (``filters`` / ``levels``: null
  for the workload's defaults), ``steps``, ``status`` (``ok``, ``oom``, ``error``);
* the device's facts: ``gpu_name``, ``gpu_total_bytes`` (what the framework
  reports as usable, not the marketing size), ``compute_capability``, ``driver``,
  ``cuda``, ``cudnn`` (as torch reports it: 91900 is 9.19.0), ``torch``, and
  ``context_bytes`` (the CUDA context alone);
* for an ``ok`` run, the three peaks: ``allocated_peak_bytes`` <=
  ``reserved_peak_bytes``, and ``nvml_used_peak_bytes`` — each a whole number of
  bytes, positive and no larger than the device.

``alloc_conf`` (``PYTORCH_CUDA_ALLOC_CONF``) is a fact of the run too; a line without
it was measured with the allocator's default, which `read_lines` is told
(``default_alloc_conf``) rather than guessing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import targets, workloads
from core.errors import ConfigError, DataFileError
from core.units import format_bytes
from core.workloads.base import parse_image_shape

# What a GPU line may say of how its configuration ended (torch.cuda.OutOfMemoryError: oom).
GPU_STATUSES = ("ok", "oom", "error")
# The peaks an ``ok`` line must have, smallest first: what the tensors needed, what the
# caching allocator held, what the device had in use (context and workspaces included).
PEAK_FIELDS = ("allocated_peak_bytes", "reserved_peak_bytes", "nvml_used_peak_bytes")
MAX_DEVICE_BYTES = targets.MAX_DEVICE_BYTES
MAX_LINE_CHARACTERS = 64 * 1024
MAX_TEXT_CHARACTERS = 256


@dataclass(frozen=True)
class GpuDevice:
    """The facts a GPU profile is keyed by: the device, its software, the allocator setting."""

    name: str
    total_bytes: int  # usable memory as the framework reports it
    compute_capability: str
    driver: str
    cuda: str
    cudnn: str  # dotted: "9.19.0"
    framework: str
    framework_version: str
    alloc_conf: str  # PYTORCH_CUDA_ALLOC_CONF; "" is the allocator's default

    def facts(self) -> dict[str, str]:
        """Every fact in words, for tables (a GPU profile's `core.profiles` facts)."""
        return {
            "GPU": self.name,
            "usable memory": format_bytes(self.total_bytes),
            "compute capability": self.compute_capability,
            "driver": self.driver,
            "CUDA": self.cuda,
            "cuDNN": self.cudnn,
            "framework": f"{self.framework} {self.framework_version}",
            "PYTORCH_CUDA_ALLOC_CONF": self.alloc_conf or "(the allocator's default)",
        }


@dataclass(frozen=True)
class GpuRun:
    """One line: a configuration trained on a GPU and its device-memory figures."""

    line: int
    config: Any  # the workload's Config
    status: str
    message: str
    steps: int
    step_times_s: tuple[float, ...]
    allocated_peak_bytes: int | None
    reserved_peak_bytes: int | None
    nvml_used_peak_bytes: int | None
    context_bytes: int
    device: GpuDevice


class _Line:
    """One parsed line and how to complain about it."""

    def __init__(self, source: str, number: int, fields: dict[str, Any]) -> None:
        self.source, self.number, self.fields = source, number, fields

    def error(self, name: str, problem: str) -> DataFileError:
        return DataFileError(f"{self.source}, line {self.number}, field {name!r}: {problem}")

    def present(self, name: str) -> Any:
        if self.fields.get(name) is None:
            raise self.error(name, "missing; every GPU line names it")
        return self.fields[name]

    def text(self, name: str) -> str:
        value = self.present(name)
        if not isinstance(value, str) or not value.strip():
            raise self.error(name, f"{value!r} is not a text")
        if len(value) > MAX_TEXT_CHARACTERS or not value.isprintable():
            raise self.error(name, f"not a plain text of at most {MAX_TEXT_CHARACTERS} characters")
        return value

    def whole(self, name: str, low: int, high: int) -> int:
        value = self.present(name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.error(name, f"{value!r} is not a whole number from {low} to {high}")
        return value

    def peak(self, name: str, device_bytes: int) -> int:
        value = self.present(name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.error(name, f"{value!r} is not a positive whole number of bytes")
        if value > device_bytes:
            raise self.error(
                name,
                f"{format_bytes(value)} is more than the device has "
                f"({format_bytes(device_bytes)}, gpu_total_bytes)",
            )
        return value


def _cudnn_version(line: _Line) -> str:
    """torch reports cuDNN as one number (91900: 9.19.0); a dotted text is taken as it is."""
    value = line.present("cudnn")
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**6:
        return f"{value // 10000}.{value // 100 % 100}.{value % 100}"
    if isinstance(value, str) and value.replace(".", "").isdigit():
        return value
    raise line.error("cudnn", f"{value!r} is not a cuDNN version (91900 or 9.19.0)")


def _device(line: _Line, default_alloc_conf: str | None) -> GpuDevice:
    alloc_conf = line.fields.get("alloc_conf", default_alloc_conf)
    if alloc_conf is None:
        raise line.error(
            "alloc_conf",
            "missing; say which PYTORCH_CUDA_ALLOC_CONF the runs were measured with "
            "(memplan import --alloc-conf '' for the allocator's default)",
        )
    if not isinstance(alloc_conf, str) or len(alloc_conf) > MAX_TEXT_CHARACTERS:
        raise line.error("alloc_conf", f"{alloc_conf!r} is not a PYTORCH_CUDA_ALLOC_CONF text")
    return GpuDevice(
        name=line.text("gpu_name"),
        total_bytes=line.whole("gpu_total_bytes", 2**30, MAX_DEVICE_BYTES),
        compute_capability=line.text("compute_capability"),
        driver=line.text("driver"),
        cuda=line.text("cuda"),
        cudnn=_cudnn_version(line),
        framework="torch",
        framework_version=line.text("torch"),
        alloc_conf=alloc_conf,
    )


def _config(line: _Line) -> Any:
    name = line.text("workload")
    try:
        module = workloads.get(name)
    except ConfigError as error:
        raise line.error("workload", str(error)) from None
    knobs = {
        stored: line.fields[given]
        for given, stored in (("filters", "base_filters"), ("levels", "levels"))
        if line.fields.get(given) is not None
    }
    try:
        shape = parse_image_shape(line.text("shape"), module.DIMS)
        return module.Config(
            image_shape=shape,
            batch_size=line.whole("batch", 1, 2**20),
            precision=line.text("precision"),
            **knobs,
        )
    except (ConfigError, TypeError) as error:
        raise line.error("shape", f"not a {name} configuration: {error}") from None


def _step_times(line: _Line) -> tuple[float, ...]:
    value = line.fields.get("step_s") or []
    if not isinstance(value, list) or not all(
        isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) and t >= 0
        for t in value
    ):
        raise line.error("step_s", "not a list of finite seconds, 0 or more")
    return tuple(float(t) for t in value)


def parse_line(source: str, number: int, text: str, default_alloc_conf: str | None) -> GpuRun:
    """Line ``number`` of ``source`` as a `GpuRun`; a `DataFileError` names what is wrong."""
    if len(text) > MAX_LINE_CHARACTERS:
        raise DataFileError(f"{source}, line {number}: over {MAX_LINE_CHARACTERS} characters")
    try:
        # NaN and Infinity read as floats, so the field's own check names the field.
        fields = json.loads(text)
    except ValueError as error:
        raise DataFileError(f"{source}, line {number}: not a JSON object ({error})") from None
    if not isinstance(fields, dict):
        raise DataFileError(f"{source}, line {number}: not a JSON object")
    line = _Line(source, number, fields)
    device = _device(line, default_alloc_conf)
    status = line.text("status")
    if status not in GPU_STATUSES:
        raise line.error("status", f"{status!r} is not one of {', '.join(GPU_STATUSES)}")
    peaks: dict[str, int | None] = dict.fromkeys(PEAK_FIELDS)
    if status == "ok":
        peaks = {name: line.peak(name, device.total_bytes) for name in PEAK_FIELDS}
        if peaks["allocated_peak_bytes"] > peaks["reserved_peak_bytes"]:  # type: ignore[operator]
            raise line.error(
                "allocated_peak_bytes",
                "larger than reserved_peak_bytes: the allocator holds every byte it hands out",
            )
    message = fields.get("error") or ""
    if not isinstance(message, str) or len(message) > 4096:
        raise line.error("error", "not a message of at most 4096 characters")
    return GpuRun(
        line=number,
        config=_config(line),
        status=status,
        message=message,
        steps=line.whole("steps", 1, 10_000),
        step_times_s=_step_times(line),
        context_bytes=line.peak("context_bytes", device.total_bytes),
        device=device,
        **peaks,
    )


def read_lines(
    path: Path, lines: Iterable[str] | None = None, default_alloc_conf: str | None = None
) -> list[GpuRun]:
    """Every non-blank line of ``path`` (or of ``lines``, named after it) as a `GpuRun`.

    All or nothing: the first bad line raises, and nothing is returned.
    """
    source = str(path)
    if lines is None:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [
        parse_line(source, number, text, default_alloc_conf)
        for number, text in enumerate(lines, start=1)
        if text.strip()
    ]
