"""What `core.machine` says TensorFlow will do in a child, without importing TensorFlow."""

from __future__ import annotations

import subprocess

import pytest

from core import machine

AVX2_EPYC_FLAGS = "fpu sse sse2 avx avx2 fma"
XEON_VNNI_FLAGS = "fpu sse sse2 avx avx2 fma avx512f avx512bw avx512_vnni"


@pytest.fixture
def cpu_flags(monkeypatch: pytest.MonkeyPatch):
    """Pretend /proc/cpuinfo lists the given flags line (None: no such line).

    `machine.machine_info` is cached for the process: what it read from the pretended
    cpuinfo must not outlive the test (a later test would see no CPU vendor or model).
    """

    def pretend(flags: str | None) -> None:
        machine.machine_info.cache_clear()
        monkeypatch.setattr(
            machine, "_cpuinfo_field", lambda name: flags if name == "flags" else None
        )

    yield pretend
    machine.machine_info.cache_clear()


@pytest.mark.parametrize(
    ("flags", "enabled"),
    [
        (AVX2_EPYC_FLAGS, False),
        (XEON_VNNI_FLAGS, True),
        (AVX2_EPYC_FLAGS + " avx_vnni", True),  # AVX2-only Intel cores with AVX-VNNI
        (AVX2_EPYC_FLAGS + " avx512f avx512_bf16", True),
        (AVX2_EPYC_FLAGS + " amx_tile", True),
        (None, False),  # no /proc/cpuinfo: not Linux, where TensorFlow leaves it off
    ],
)
def test_unset_tensorflow_turns_onednn_on_only_for_cpus_with_neural_network_features(
    monkeypatch: pytest.MonkeyPatch, cpu_flags, flags: str | None, enabled: bool
) -> None:
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    cpu_flags(flags)
    assert machine.onednn_enabled() is enabled


@pytest.mark.parametrize(
    ("setting", "flags", "enabled"),
    [
        ("1", AVX2_EPYC_FLAGS, True),
        ("TRUE", AVX2_EPYC_FLAGS, True),
        ("0", XEON_VNNI_FLAGS, False),
        ("false", XEON_VNNI_FLAGS, False),
        ("yes", AVX2_EPYC_FLAGS, False),  # not a value TensorFlow accepts: its default stands
        ("yes", XEON_VNNI_FLAGS, True),
    ],
)
def test_the_variable_overrides_the_default_when_tensorflow_accepts_its_value(
    monkeypatch: pytest.MonkeyPatch, cpu_flags, setting: str, flags: str, enabled: bool
) -> None:
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", setting)
    cpu_flags(flags)
    assert machine.onednn_enabled() is enabled


@pytest.mark.parametrize(
    ("precision", "flags", "enabled"),
    [
        ("float32", AVX2_EPYC_FLAGS, True),
        # TensorFlow logs "oneDNN supports DT_BFLOAT16 only on platforms with AVX-512.
        # Falling back to the default Eigen-based implementation" and runs its own kernels.
        ("mixed_bfloat16", AVX2_EPYC_FLAGS, False),
        ("mixed_bfloat16", AVX2_EPYC_FLAGS + " avx_ne_convert", True),
        ("mixed_bfloat16", XEON_VNNI_FLAGS, True),
        ("mixed_float16", XEON_VNNI_FLAGS, False),  # AVX-512 without FP16
        ("mixed_float16", XEON_VNNI_FLAGS + " avx512_fp16", True),
        ("mixed_float16", AVX2_EPYC_FLAGS + " avx_ne_convert", True),
    ],
)
def test_with_onednn_on_a_half_precision_runs_on_it_only_where_the_cpu_takes_its_dtype(
    monkeypatch: pytest.MonkeyPatch, cpu_flags, precision: str, flags: str, enabled: bool
) -> None:
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    cpu_flags(flags)
    assert machine.onednn_enabled(precision) is enabled


def test_with_onednn_off_no_precision_runs_on_it(monkeypatch: pytest.MonkeyPatch, cpu_flags):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    cpu_flags(XEON_VNNI_FLAGS + " avx512_fp16")
    assert not any(
        machine.onednn_enabled(p) for p in ("float32", "mixed_bfloat16", "mixed_float16")
    )


def test_this_machines_profile_at_bfloat16_is_its_onednn_off_profile_on_an_avx2_cpu(
    monkeypatch: pytest.MonkeyPatch, cpu_flags
) -> None:
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    cpu_flags(AVX2_EPYC_FLAGS)
    on, half = machine.this_profile(), machine.this_profile("mixed_bfloat16")
    assert on.onednn_enabled and not half.onednn_enabled
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    assert machine.this_profile().key == half.key


@pytest.fixture
def getconf(monkeypatch: pytest.MonkeyPatch):
    """Pretend ``getconf LEVEL3_CACHE_SIZE`` prints the given text (an exception: fails)."""

    def pretend(answer: str | Exception) -> None:
        def run(command, **kwargs):
            assert command == ["getconf", "LEVEL3_CACHE_SIZE"]
            if isinstance(answer, Exception):
                raise answer
            return subprocess.CompletedProcess(command, 0, stdout=answer, stderr="")

        machine.l3_cache_bytes.cache_clear()
        monkeypatch.setattr(machine.subprocess, "run", run)

    yield pretend
    machine.l3_cache_bytes.cache_clear()


def test_the_l3_cache_is_what_getconf_reads_from_the_cpu(getconf) -> None:
    getconf("268435456\n")

    assert machine.l3_cache_bytes() == 256 * 2**20


@pytest.mark.parametrize(
    "answer",
    ["0\n", "\n", "undefined\n", FileNotFoundError("getconf"), subprocess.TimeoutExpired("g", 5)],
    ids=["zero", "empty", "undefined", "no getconf", "hangs"],
)
def test_an_l3_cache_that_cannot_be_read_is_unknown_not_guessed(getconf, answer) -> None:
    getconf(answer)

    assert machine.l3_cache_bytes() is None


def test_every_run_records_the_l3_cache_with_the_other_machine_facts() -> None:
    assert "l3_cache_bytes" in machine.machine_info()
    assert machine.machine_info()["l3_cache_bytes"] == machine.l3_cache_bytes()


# The first processor of /proc/cpuinfo as each kind of machine writes it (trimmed): the
# reference Intel Xeon VM, this repository's AVX2 EPYC VM (family 25), the newer EPYC VM
# of issue 28 (family 26) and an ARM host, which has no "cpu family" line at all.
XEON_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz
stepping\t: 7
flags\t\t: fpu avx2 avx512f
"""
EPYC_25_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
"""
EPYC_26_CPUINFO = EPYC_25_CPUINFO.replace(": 25", ": 26").replace("model\t\t: 1", "model\t\t: 2")
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 50.00
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
"""


@pytest.mark.parametrize(
    ("text", "generation"),
    [
        (XEON_CPUINFO, (6, 85, 7)),
        (EPYC_25_CPUINFO, (25, 1, 1)),
        (EPYC_26_CPUINFO, (26, 2, 1)),
        (ARM_CPUINFO, (None, None, None)),
        (EPYC_25_CPUINFO.replace("stepping\t: 1", "stepping\t: unknown"), (25, 1, None)),
    ],
    ids=["intel", "amd-family-25", "amd-family-26", "no-family-line", "stepping-unknown"],
)
def test_the_cpu_generation_is_read_from_cpuinfo_and_unknown_where_absent(
    text: str, generation: tuple[int | None, ...]
) -> None:
    found = machine.cpu_generation(text)

    # "model" is its own line, never the "model name" beside it (which is no number).
    assert (found["cpu_family"], found["cpu_model_number"], found["cpu_stepping"]) == generation


def test_every_run_records_this_machines_cpu_generation() -> None:
    facts = machine.machine_info()

    assert {"cpu_family", "cpu_model_number", "cpu_stepping"} <= set(facts)
    with open("/proc/cpuinfo") as cpuinfo:
        assert facts["cpu_family"] == machine.cpu_generation(cpuinfo.read())["cpu_family"]
