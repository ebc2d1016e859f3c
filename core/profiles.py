"""Machine profiles: the facts about a machine that change a training run's peak memory.

The same configuration peaked up to 2.7x higher on an AVX2-only AMD EPYC (oneDNN
off, TensorFlow's default there) than on the Intel Xeon of the bundled reference,
and turning oneDNN on there nearly halved 64^3 batch 2; one usable core instead of two
lowered that point's peak from 3.16 to 2.36 GiB on that EPYC (docs/machines.md
has each figure's command and machine). So runs are grouped, and models
fitted, per *profile*: CPU vendor and model (its name, and the family and model
numbers that tell two generations behind one name apart), the instruction-set level the
kernels choose from, the CPUs and the cores the process may use, the framework's
intra-op threads, total RAM, the framework (TensorFlow or torch, schema 8) and its
versions, and TensorFlow's oneDNN on/off — never by hostname (two different VMs are
both called ``vm``). The framework moves a peak as much as the machine does (the same
3D U-Net peaked 15.2 GB on JAX and 37.5 GB on torch on one H100, Keras 3; issue 29),
so a torch run never joins a TensorFlow profile.

A profile is computed from a run's stored columns (`profile_of`), never stored
itself, so it cannot drift from the facts. A fact a run did not record (runs
measured before schema 3 have no instruction-set level, usable cores or
intra-op threads; runs measured before schema 7 no CPU family or model number) stays
None and is shown as "unknown": such a run never joins a profile whose fact is
known. The CPU vendor of an older run is read from the model name it stored
("Intel(R) Xeon(R) ..." is Intel), which is a reading of what it stored, not a guess.
A GPU run's profile (schema 9, `core.targets`) is its device's facts alone: GPU name,
total bytes, compute capability, driver, CUDA, cuDNN, framework and version, allocator setting.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import astuple, dataclass, replace
from typing import Any

import pandas as pd

from core import frameworks, profile_notes, targets
from core.cpu_names import ISA_TITLES, UNKNOWN, short_model, vendor_from_model
from core.device_runs import GpuDevice
from core.errors import StoreError
from core.profile_notes import HALF_ON_ONEDNN_PROFILE, HALF_WITHOUT_ONEDNN, ONEDNN_OFF_NOTE
from core.units import GIB, format_bytes

# The column a runs frame carries each run's profile key in (`with_keys`).
KEY_COLUMN = "machine_profile"
# The runs columns a profile is computed from (`core.records.RunRecord`).
PROFILE_COLUMNS: tuple[str, ...] = (
    "cpu_vendor",
    "cpu_model",
    "cpu_isa",
    "cpu_family",
    "cpu_model_number",
    "cpu_cores",
    "usable_cores",
    "intra_op_threads",
    "total_ram_bytes",
    "tensorflow_version",
    "keras_version",
    "onednn_enabled",
    "framework",
    "framework_version",
    "torch_intra_op_threads",
    targets.TARGET_COLUMN,
    *targets.DEVICE_FACT_COLUMNS,
)

# How many hex digits of the fact hash make a profile key (collisions among a few
# hundred profiles are then vanishingly unlikely; a prefix of it selects one).
KEY_LENGTH = 10
# The MachineProfile fields a run records since schema 7, last in the dataclass
# (`MachineProfile.key` leaves them out where both are unknown).
GENERATION_FIELDS: tuple[str, ...] = ("cpu_family", "cpu_model_number")
# The MachineProfile fields a run records since schema 8, after them (`MachineProfile.key`
# leaves them out for TensorFlow, so a TensorFlow profile keeps the key it had).
FRAMEWORK_FIELDS: tuple[str, ...] = ("framework", "framework_version")


def _hashed(facts: tuple) -> str:
    text = json.dumps(facts, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


@dataclass(frozen=True)
class MachineProfile:
    """What a run's machine and framework were, as far as the run recorded it (None: unknown)."""

    cpu_vendor: str | None
    cpu_model: str | None
    cpu_isa: str | None
    cpu_cores: int | None
    usable_cores: int | None
    intra_op_threads: int | None
    ram_gib: int | None  # total RAM rounded up to whole GiB (`whole_gib`)
    tensorflow_version: str | None
    keras_version: str | None
    onednn_enabled: bool | None
    # /proc/cpuinfo "cpu family" and "model" (schema 7): two CPU generations one model name
    # covers ("AMD EPYC" on a VM) are two profiles
    cpu_family: int | None = None
    cpu_model_number: int | None = None
    # schema 8: the framework, and the version of one other than TensorFlow (whose version
    # is tensorflow_version, beside Keras'); a torch profile has no TensorFlow, Keras or
    # oneDNN fact (oneDNN on/off is TensorFlow's setting), and its intra_op_threads are torch's
    framework: str = frameworks.TENSORFLOW
    framework_version: str | None = None
    # schema 9: a GPU profile's device, its software and allocator setting (None: host RAM)
    gpu: GpuDevice | None = None

    @property
    def key(self) -> str:
        """A short stable id of these facts (hex), what ``--machine`` takes.

        A TensorFlow profile hashes the facts it had before schema 8, and one that does
        not know its CPU generation those it had before schema 7 only, so its key is the
        one stored evaluations and the docs name. A GPU profile hashes its device's facts.
        """
        if self.gpu is not None:
            return _hashed((targets.GPU_MEMORY, *astuple(self.gpu)))
        facts = astuple(self)[:-1]
        if self.framework == frameworks.TENSORFLOW:
            facts = facts[: -len(FRAMEWORK_FIELDS)]
        else:
            return _hashed(facts)
        if self.cpu_family is None and self.cpu_model_number is None:
            facts = facts[: -len(GENERATION_FIELDS)]
        return _hashed(facts)

    @property
    def framework_title(self) -> str:
        """The framework and its minor version: "TensorFlow 2.21", "PyTorch 2.13"."""
        tensorflow = self.framework == frameworks.TENSORFLOW
        version = self.tensorflow_version if tensorflow else self.framework_version
        return frameworks.title(self.framework, version)

    @property
    def generation(self) -> str | None:
        """The CPU generation in words ("family 25, model 1"); None where unknown."""
        if self.cpu_family is None and self.cpu_model_number is None:
            return None
        shown = [
            "unknown" if n is None else str(n) for n in (self.cpu_family, self.cpu_model_number)
        ]
        return f"family {shown[0]}, model {shown[1]}"

    def same_but_generation(self, other: MachineProfile) -> bool:
        """Whether ``other`` has these facts except a CPU generation it did not record: not
        this profile (an unknown fact never joins a known one), but this machine as far as its
        runs said, what an answer falls back to first."""
        return (
            other.generation is None
            and replace(self, cpu_family=None, cpu_model_number=None) == other
        )

    @property
    def determined(self) -> bool:
        """Whether the run said which CPU it ran on; without that it fits with no other run."""
        return self.cpu_model is not None or self.gpu is not None

    @property
    def target(self) -> targets.MemoryTarget:
        """The memory this profile's runs measured (`core.targets`)."""
        return targets.target(targets.HOST_RAM if self.gpu is None else targets.GPU_MEMORY)

    @property
    def cores(self) -> int | None:
        """The cores the process could use, else (older runs) the machine's CPU count."""
        return self.usable_cores if self.usable_cores is not None else self.cpu_cores

    @property
    def machine_label(self) -> str:
        """The machine alone, no framework: "AMD EPYC (family 25, model 1), AVX2, 2 cores"."""
        if self.gpu is not None:
            return f"{self.gpu.name} ({format_bytes(self.gpu.total_bytes)} usable)"
        if not self.determined:
            return "unknown machine (its runs did not record the CPU)"
        model = self.cpu_model or UNKNOWN
        if self.cpu_vendor and not model.lower().startswith(self.cpu_vendor.lower()):
            model = f"{self.cpu_vendor} {model}"
        if self.generation is not None:
            model = f"{model} ({self.generation})"
        isa = ISA_TITLES.get(self.cpu_isa or "", "instruction set unknown")
        cores = f"{self.cores} cores" if self.cores is not None else "cores unknown"
        return f"{model}, {isa}, {cores}"

    @property
    def label(self) -> str:
        """The profile in plain words: "AMD EPYC (family 25, model 1), AVX2, 2 cores, ..."."""
        if not self.determined:
            return self.machine_label
        parts = [self.machine_label, self.framework_title]
        if self.gpu is not None:
            conf = self.gpu.alloc_conf or "allocator default"
            parts[1:1] = [f"compute {self.gpu.compute_capability}", f"CUDA {self.gpu.cuda}"]
            parts.append(conf)
        if self.onednn_enabled is False:
            parts.append("oneDNN off")
        return ", ".join(parts)

    @property
    def onednn_note(self) -> str | None:
        """`onednn_note_for` float32, the precision of every profile's default network."""
        return self.onednn_note_for("float32")

    def onednn_note_for(self, precision: str) -> str | None:
        """What an answer at ``precision`` for this profile must say about oneDNN, else None.

        At a half precision on a CPU below AVX-512, `HALF_WITHOUT_ONEDNN` (plus, for a
        profile whose runs had oneDNN, which profile describes such a job); otherwise
        `ONEDNN_OFF_NOTE` for a profile whose runs had oneDNN off.
        """
        half = precision != "float32" and self.cpu_isa not in profile_notes.HALF_ONEDNN_LEVELS
        if half and self.cpu_isa is not None and self.onednn_enabled is not None:
            note = HALF_WITHOUT_ONEDNN.format(precision=precision)
            if self.onednn_enabled:
                off_key = replace(self, onednn_enabled=False).key
                note += HALF_ON_ONEDNN_PROFILE.format(precision=precision, off_key=off_key)
            return note
        return ONEDNN_OFF_NOTE if self.onednn_enabled is False else None

    def facts(self) -> dict[str, str]:
        """Every fact in words, "unknown" where the runs did not record it (for tables)."""

        def shown(value: Any) -> str:
            return UNKNOWN if value is None else str(value)

        if self.gpu is not None:
            return {"profile": self.key, "machine": self.label, **self.gpu.facts()}
        onednn = None if self.onednn_enabled is None else ("on" if self.onednn_enabled else "off")
        return {
            "profile": self.key,
            "machine": self.label,
            "CPU vendor": shown(self.cpu_vendor),
            "CPU model": shown(self.cpu_model),
            "CPU family": shown(self.cpu_family),
            "CPU model number": shown(self.cpu_model_number),
            "instruction set": ISA_TITLES.get(self.cpu_isa or "", UNKNOWN),
            "CPUs": shown(self.cpu_cores),
            "usable cores": shown(self.usable_cores),
            "intra-op threads": shown(self.intra_op_threads),
            "RAM (GiB)": shown(self.ram_gib),
            "framework": self.framework_title,
            "TensorFlow": shown(self.tensorflow_version),
            "Keras": shown(self.keras_version),
            "oneDNN": shown(onednn),
        }


def _value(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    try:  # pandas gives NaN / NA / NaT for a NULL
        if value is None or value != value:
            return None
    except (TypeError, ValueError):  # pd.NA refuses comparison
        return None
    return value


def whole_gib(total_ram_bytes: int) -> int:
    """Total RAM as the whole GiB it groups by: rounded *up*, never to the nearest.

    The kernel reports a little less than the machine has, by a few MiB that vary between
    boots of one VM kind (a 24 GiB VM reads about 23.5): rounding to the nearest would
    split that kind into two profiles; a reported total stays just under a whole GiB.
    """
    return math.ceil(total_ram_bytes / GIB)


def profile_of(row: Mapping[str, Any]) -> MachineProfile:
    """The profile of one run (a ``runs`` row or a dict with PROFILE_COLUMNS)."""
    cpu_model = _value(row, "cpu_model")
    model = short_model(str(cpu_model)) if cpu_model is not None else None
    vendor = _value(row, "cpu_vendor") or vendor_from_model(model)
    ram = _value(row, "total_ram_bytes")

    def whole(name: str) -> int | None:
        found = _value(row, name)
        return None if found is None else int(found)

    def text(name: str) -> str | None:
        found = _value(row, name)
        return None if found is None or found in ("", "not installed") else str(found)

    if _value(row, targets.TARGET_COLUMN) == targets.GPU_MEMORY:
        return _gpu_profile(row)
    # A torch run's TensorFlow columns say what was installed beside it, not what trained it.
    framework = text("framework") or frameworks.TENSORFLOW
    tensorflow = framework == frameworks.TENSORFLOW
    onednn = _value(row, "onednn_enabled") if tensorflow else None
    return MachineProfile(
        cpu_vendor=vendor,
        cpu_model=model,
        cpu_isa=text("cpu_isa"),
        cpu_cores=whole("cpu_cores"),
        usable_cores=whole("usable_cores"),
        intra_op_threads=whole("intra_op_threads" if tensorflow else "torch_intra_op_threads"),
        ram_gib=None if ram is None else whole_gib(int(ram)),
        tensorflow_version=text("tensorflow_version") if tensorflow else None,
        keras_version=text("keras_version") if tensorflow else None,
        onednn_enabled=None if onednn is None else bool(onednn),
        cpu_family=whole("cpu_family"),
        cpu_model_number=whole("cpu_model_number"),
        framework=framework,
        framework_version=None if tensorflow else text("framework_version"),
    )


def _gpu_profile(row: Mapping[str, Any]) -> MachineProfile:
    """The profile of a GPU run: its device's facts (`core.targets.DEVICE_FACT_COLUMNS`)."""
    name, total, *software, conf = (_value(row, n) for n in targets.DEVICE_FACT_COLUMNS)
    framework, version = (str(_value(row, n)) for n in ("framework", "framework_version"))
    device = GpuDevice(str(name), int(total), *map(str, software), framework, version, conf or "")
    # No host fact: the ten CPU, RAM and TensorFlow facts a GPU run did not record.
    return MachineProfile(*[None] * 10, framework=framework, framework_version=version, gpu=device)


def profile_keys(runs: pd.DataFrame) -> list[str]:
    """The profile key of every row of a runs DataFrame, in order."""
    columns = [name for name in PROFILE_COLUMNS if name in runs.columns]
    if runs.empty:
        return []
    # The runs of one machine share every fact: key each distinct combination once, not
    # each run (a database of 10,000 runs holds a handful of machines).
    groups = runs[columns].groupby(columns, dropna=False, sort=False)
    firsts = runs.loc[groups.head(1).index, columns].to_dict("records")
    keys = [profile_of(row).key for row in firsts]
    return [keys[group] for group in groups.ngroup()]


def with_keys(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with each run's profile key in KEY_COLUMN (computed once: kept if there)."""
    if KEY_COLUMN in runs:
        return runs
    keys = profile_keys(runs) if len(runs) else []
    return runs.assign(**{KEY_COLUMN: pd.Series(keys, index=runs.index, dtype=object)})


def runs_of(runs: pd.DataFrame, key: str) -> pd.DataFrame:
    """The rows of ``runs`` measured on profile ``key`` (with KEY_COLUMN added)."""
    runs = with_keys(runs)
    return runs[runs[KEY_COLUMN] == key]


def profiles_in(runs: pd.DataFrame) -> dict[str, MachineProfile]:
    """The distinct profiles of a runs DataFrame, by key, most runs first.

    Reads one run per profile of a frame that carries its keys (`with_keys`), so
    a caller that keys its runs once never has every run's profile computed again.
    """
    if runs.empty:
        return {}
    runs = with_keys(runs)
    counts = runs[KEY_COLUMN].value_counts()
    firsts = runs.drop_duplicates(KEY_COLUMN).set_index(KEY_COLUMN)
    columns = [name for name in PROFILE_COLUMNS if name in firsts.columns]
    return {
        key: profile_of(firsts.loc[key, columns].to_dict())
        for key in sorted(counts.index, key=lambda key: (-counts[key], key))
    }


def generation_of(runs: pd.DataFrame) -> str:
    """The CPU family/model/stepping of a profile's runs: "25/1/1" (steppings "1,2"), "unknown".

    Stepping is not part of the profile, so one profile's runs may show several.
    """

    def shown(name: str) -> str:
        found = runs[name].dropna().astype(int) if name in runs else pd.Series(dtype=int)
        return ",".join(map(str, sorted(set(found)))) or "?"

    parts = [shown(name) for name in (*GENERATION_FIELDS, "cpu_stepping")]
    return UNKNOWN if parts == ["?"] * 3 else "/".join(parts)


def baseline_bytes(runs: pd.DataFrame) -> int | None:
    """The median fresh-process baseline of ``runs`` (resident bytes right after the framework
    import, before training); None where no run got that far."""
    found = runs["baseline_bytes"].dropna() if "baseline_bytes" in runs else pd.Series()
    return None if found.empty else int(found.median())


def resolve(text: str, known: Mapping[str, MachineProfile]) -> MachineProfile:
    """The profile a ``--machine`` value names: a key or a unique prefix of one.

    An unknown or ambiguous value is refused with every known profile listed.
    """
    wanted = text.strip().lower()
    matches = [key for key in known if key.startswith(wanted)] if wanted else []
    if len(matches) == 1:
        return known[matches[0]]
    listing = "; ".join(f"{key} ({profile.label})" for key, profile in known.items()) or "none"
    if not matches:
        raise StoreError(f"no machine profile {text!r}; the known profiles are: {listing}")
    raise StoreError(
        f"machine profile {text!r} is ambiguous: it starts {len(matches)} keys; "
        f"give more of the key. The known profiles are: {listing}"
    )
