"""What `core.machine` says TensorFlow will do in a child, without importing TensorFlow."""

from __future__ import annotations

import pytest

from core import machine

AVX2_EPYC_FLAGS = "fpu sse sse2 avx avx2 fma"
XEON_VNNI_FLAGS = "fpu sse sse2 avx avx2 fma avx512f avx512bw avx512_vnni"


@pytest.fixture
def cpu_flags(monkeypatch: pytest.MonkeyPatch):
    """Pretend /proc/cpuinfo lists the given flags line (None: no such line)."""

    def pretend(flags: str | None) -> None:
        monkeypatch.setattr(
            machine, "_cpuinfo_field", lambda name: flags if name == "flags" else None
        )

    return pretend


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
