"""Machine profiles (`core.profiles`): which runs were measured on the same kind of machine.

A profile is computed from the columns a run stored; these tests are examples of
reading one from a runs row, showing it, keying it and naming it on the command line.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from core import cpu_names, profiles, targets
from core.errors import StoreError
from core.units import GIB

MIB = 2**20
# The reference VM: a 2-core AVX-512 Xeon whose kernel reports 23.5 GiB of its 24.
XEON: dict[str, Any] = {
    "cpu_vendor": "Intel",
    "cpu_model": "Intel(R) Xeon(R) Processor",
    "cpu_isa": "avx512",
    "cpu_cores": 2,
    "usable_cores": 2,
    "intra_op_threads": 2,
    "total_ram_bytes": 25_276_514_304,
    "tensorflow_version": "2.21.0",
    "keras_version": "3.15.1",
    "onednn_enabled": True,
}
# The same VM kind with an AVX2-only AMD EPYC: the same name, ``vm``, but not the same machine.
EPYC = XEON | {
    "cpu_vendor": "AMD",
    "cpu_model": "AMD EPYC 9B14 96-Core Processor",
    "cpu_isa": "avx2",
}
# What a run measured before schema 3 stored: no vendor, ISA, usable cores or threads.
OLDER = XEON | {"cpu_vendor": None, "cpu_isa": None, "usable_cores": None, "intra_op_threads": None}


# A torch run on the Xeon: its own version and intra-op threads (schema 8).
TORCH_FACTS: dict[str, Any] = {
    "framework": "torch",
    "framework_version": "2.13.0+cpu",
    "torch_intra_op_threads": 2,
}
TORCH_ON_XEON = XEON | TORCH_FACTS | {"intra_op_threads": None}


# --- facts read from /proc/cpuinfo and model names ---------------------------------------


@pytest.mark.parametrize(
    ("flags", "level"),
    [
        (["sse4_2", "avx", "avx2", "avx512f", "avx512_bf16", "amx_tile"], "amx"),
        (["avx2", "avx512f", "avx512_bf16"], "avx512_bf16"),
        (["avx2", "avx512f", "avx512dq"], "avx512"),
        (["sse4_2", "avx", "avx2", "fma"], "avx2"),
        (["sse4_2", "avx"], "below_avx2"),
        ([], "below_avx2"),
    ],
)
def test_the_isa_level_is_the_best_tier_onednn_dispatches_on(flags: list[str], level: str) -> None:
    assert cpu_names.isa_level(flags) == level
    assert cpu_names.isa_level(iter(flags)) == level  # any iterable, e.g. a split flags line


@pytest.mark.parametrize(
    ("model", "vendor"),
    [
        ("Intel(R) Xeon(R) Processor", "Intel"),
        ("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", "Intel"),
        ("AMD EPYC 9B14 96-Core Processor", "AMD"),
        ("amd ryzen 9 7950x", "AMD"),
        ("Test CPU", None),  # names no vendor: stays unknown, is not guessed
        ("Intellect 9000", None),  # a word merely containing a vendor's letters is not one
        ("", None),
        (None, None),
    ],
)
def test_the_vendor_is_what_the_model_name_states(model: str | None, vendor: str | None) -> None:
    assert cpu_names.vendor_from_model(model) == vendor


@pytest.mark.parametrize(
    ("model", "short"),
    [
        ("Intel(R) Xeon(R) Processor", "Intel Xeon"),
        ("Intel(R) Xeon(R) CPU @ 2.20GHz", "Intel Xeon"),
        ("AMD EPYC 9B14 96-Core Processor", "AMD EPYC 9B14"),
        ("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", "Intel Core i7-8650U"),
        ("unknown", None),
        ("", None),
        (None, None),
    ],
)
def test_a_short_model_drops_trademarks_core_counts_and_clock(
    model: str | None, short: str | None
) -> None:
    assert cpu_names.short_model(model) == short


# --- a run's profile --------------------------------------------------------------------


def test_the_profile_of_a_run_reads_its_stored_columns() -> None:
    profile = profiles.profile_of(XEON | {"hostname": "vm", "run_id": "anything else is ignored"})

    assert profile == profiles.MachineProfile(
        cpu_vendor="Intel",
        cpu_model="Intel Xeon",
        cpu_isa="avx512",
        cpu_cores=2,
        usable_cores=2,
        intra_op_threads=2,
        ram_gib=24,
        tensorflow_version="2.21.0",
        keras_version="3.15.1",
        onednn_enabled=True,
    )
    assert profile.determined and profile.cores == 2


def test_a_label_says_the_profile_in_plain_words() -> None:
    assert profiles.profile_of(XEON).label == "Intel Xeon, AVX-512, 2 cores, TensorFlow 2.21"
    assert profiles.profile_of(EPYC).label == "AMD EPYC 9B14, AVX2, 2 cores, TensorFlow 2.21"
    assert profiles.profile_of(XEON | {"onednn_enabled": False}).label == (
        "Intel Xeon, AVX-512, 2 cores, TensorFlow 2.21, oneDNN off"
    )
    # A vendor the model name does not start with is put in front of it.
    assert profiles.profile_of(XEON | {"cpu_model": "Xeon Gold"}).label.startswith(
        "Intel Xeon Gold, "
    )


def test_a_profile_with_onednn_off_says_what_turning_it_on_would_change() -> None:
    off = profiles.profile_of(EPYC | {"onednn_enabled": False})
    assert off.onednn_note == profiles.ONEDNN_OFF_NOTE
    assert "TF_ENABLE_ONEDNN_OPTS=1" in off.onednn_note
    # On, or not recorded: nothing to add.
    assert profiles.profile_of(EPYC).onednn_note is None
    assert profiles.profile_of(EPYC | {"onednn_enabled": None}).onednn_note is None


def test_an_answer_at_bfloat16_below_avx512_says_onednn_does_not_run_it() -> None:
    on = profiles.profile_of(EPYC)
    off = profiles.profile_of(EPYC | {"onednn_enabled": False})
    said_off = off.onednn_note_for("mixed_bfloat16")
    # Not "turn oneDNN on": it would not run mixed_bfloat16 on this CPU.
    assert said_off == profiles.HALF_WITHOUT_ONEDNN.format(precision="mixed_bfloat16")
    # A profile whose runs had oneDNN describes float32 only: it names the one without.
    said_on = on.onednn_note_for("mixed_bfloat16")
    assert said_on.startswith(said_off) and f"ask profile {off.key}" in said_on
    # float32, an AVX-512 CPU, or an unknown instruction set: nothing new to say.
    assert on.onednn_note_for("float32") is None
    assert off.onednn_note_for("float32") == profiles.ONEDNN_OFF_NOTE
    assert profiles.profile_of(XEON).onednn_note_for("mixed_bfloat16") is None
    assert profiles.profile_of(OLDER).onednn_note_for("mixed_bfloat16") is None


def test_an_older_run_shows_what_it_did_not_record_as_unknown() -> None:
    profile = profiles.profile_of(OLDER)

    # The vendor is read from the model name the run stored; the ISA is not guessed.
    assert (profile.cpu_vendor, profile.cpu_isa, profile.usable_cores) == ("Intel", None, None)
    assert profile.cores == 2  # the machine's CPU count stands in for the usable cores
    assert profile.label == "Intel Xeon, instruction set unknown, 2 cores, TensorFlow 2.21"
    facts = profile.facts()
    assert (
        facts["instruction set"]
        == facts["usable cores"]
        == facts["intra-op threads"]
        == ("unknown")
    )
    assert (facts["CPU vendor"], facts["oneDNN"], facts["RAM (GiB)"]) == ("Intel", "on", "24")
    assert facts["profile"] == profile.key and facts["machine"] == profile.label


def test_the_key_is_stable_and_differs_when_any_fact_differs() -> None:
    key = profiles.profile_of(XEON).key

    assert key == profiles.profile_of(dict(XEON)).key  # the same facts, the same key
    assert len(key) == profiles.KEY_LENGTH and int(key, 16) >= 0  # short hex
    changed = {
        "cpu_vendor": "AMD",
        "cpu_model": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
        "cpu_isa": "amx",
        "cpu_cores": 4,
        "usable_cores": 1,
        "intra_op_threads": 1,
        "total_ram_bytes": 64 * GIB,
        "tensorflow_version": "2.20.0",
        "keras_version": "3.11.0",
        "onednn_enabled": False,
        "cpu_family": 6,
        "cpu_model_number": 143,
        "framework": "torch",
    }
    # A TensorFlow run's version is tensorflow_version; torch's threads are not its own;
    # a GPU run's facts are its device's (below).
    gpu = {targets.TARGET_COLUMN, *targets.DEVICE_FACT_COLUMNS}
    assert set(changed) | set(TORCH_FACTS) | gpu == set(profiles.PROFILE_COLUMNS)
    keys = {name: profiles.profile_of(XEON | {name: value}).key for name, value in changed.items()}
    assert key not in keys.values()
    assert len(set(keys.values())) == len(changed)
    # Facts that are not part of a profile change nothing.
    assert profiles.profile_of(XEON | {"hostname": "other", "numpy_version": "1.0"}).key == key


def test_a_tensorflow_run_keeps_its_key_when_the_framework_is_explicit() -> None:
    # The keys stored evaluations and the docs name (before schema 8) stay what they were.
    implicit = profiles.profile_of(XEON)
    explicit = profiles.profile_of(
        XEON | {"framework": "tensorflow", "framework_version": "2.21.0"}
    )

    assert explicit == implicit and explicit.key == implicit.key
    assert implicit.label == "Intel Xeon, AVX-512, 2 cores, TensorFlow 2.21"


def test_a_torch_run_is_its_own_profile_named_by_its_framework() -> None:
    torch = profiles.profile_of(TORCH_ON_XEON)

    assert torch.key != profiles.profile_of(XEON).key
    assert torch.label == "Intel Xeon, AVX-512, 2 cores, PyTorch 2.13"
    assert torch.intra_op_threads == 2  # torch's own, not TensorFlow's (None here)
    # What TensorFlow would be here is no fact of a torch run: it never splits one.
    assert (torch.tensorflow_version, torch.keras_version, torch.onednn_enabled) == (None,) * 3
    installed_beside = TORCH_ON_XEON | {"tensorflow_version": "2.20.0", "onednn_enabled": False}
    assert profiles.profile_of(installed_beside).key == torch.key
    assert torch.onednn_note_for("mixed_bfloat16") is None
    for name, value in {"framework_version": "2.12.0", "torch_intra_op_threads": 1}.items():
        assert profiles.profile_of(TORCH_ON_XEON | {name: value}).key != torch.key, name
    assert torch.facts()["framework"] == "PyTorch 2.13"


def test_a_fact_a_run_did_not_record_never_matches_a_recorded_one() -> None:
    assert profiles.profile_of(OLDER).key != profiles.profile_of(XEON).key
    assert profiles.profile_of(XEON | {"cpu_isa": None}).key != profiles.profile_of(XEON).key


# Two generations of one marketing name on the same VM kind (issue 28): /proc/cpuinfo says
# "AMD EPYC" for both, cpu family 25 (Zen 3/4) and 26 (Zen 5) tell them apart.
EPYC_25 = EPYC | {"cpu_model": "AMD EPYC", "cpu_family": 25, "cpu_model_number": 1}
EPYC_26 = EPYC_25 | {"cpu_family": 26, "cpu_model_number": 2}


def test_two_cpu_generations_behind_one_name_are_two_profiles() -> None:
    older, newer = profiles.profile_of(EPYC_25), profiles.profile_of(EPYC_26)

    assert older.key != newer.key
    assert older.label == "AMD EPYC (family 25, model 1), AVX2, 2 cores, TensorFlow 2.21"
    assert newer.label.startswith("AMD EPYC (family 26, model 2), AVX2")
    assert (older.facts()["CPU family"], older.facts()["CPU model number"]) == ("25", "1")
    runs = pd.DataFrame([EPYC_25, EPYC_26, EPYC_26])
    assert list(profiles.profiles_in(runs)) == [newer.key, older.key]


def test_a_run_without_its_cpu_generation_never_joins_one_with_it() -> None:
    unrecorded = EPYC_25 | {"cpu_family": None, "cpu_model_number": None}
    runs = pd.DataFrame([EPYC_25, unrecorded])

    assert len(profiles.profiles_in(runs)) == 2
    assert profiles.profile_of(unrecorded).facts()["CPU family"] == "unknown"
    # Not the same profile, but the same machine as far as the older run said.
    assert profiles.profile_of(EPYC_25).same_but_generation(profiles.profile_of(unrecorded))
    assert not profiles.profile_of(EPYC_26).same_but_generation(profiles.profile_of(EPYC_25))
    assert not profiles.profile_of(EPYC_25).same_but_generation(profiles.profile_of(OLDER))


def test_a_profile_without_its_cpu_generation_keeps_the_key_it_had_before_schema_7() -> None:
    # What memplan 8c5ac2b (schema 6) keyed XEON as: stored evaluations and the docs name such
    # keys (the bundled Intel Xeon profile is 9b59349f74 before and after).
    assert profiles.profile_of(XEON).key == "a10ddaabfb"
    assert profiles.profile_of(XEON | {"cpu_family": 6}).key != "a10ddaabfb"


def test_the_generation_column_shows_family_model_and_every_stepping() -> None:
    runs = pd.DataFrame(
        [
            EPYC_25 | {"cpu_stepping": 1},
            EPYC_25 | {"cpu_stepping": 2},
            EPYC_25 | {"cpu_stepping": 1},
        ]
    )

    assert profiles.generation_of(runs) == "25/1/1,2"
    assert profiles.generation_of(pd.DataFrame([EPYC])) == "unknown"
    assert profiles.generation_of(pd.DataFrame([EPYC_25])) == "25/1/?"


def test_the_baseline_is_the_median_over_the_runs_that_reached_it() -> None:
    runs = pd.DataFrame({"baseline_bytes": [600 * MIB, None, 700 * MIB, 620 * MIB]})

    assert profiles.baseline_bytes(runs) == 620 * MIB
    assert profiles.baseline_bytes(runs.iloc[[1]]) is None


@pytest.mark.parametrize("apart_mib", [1, 4, 40])
def test_ram_is_grouped_by_gib_so_vms_of_one_size_a_few_mib_apart_share_a_profile(
    apart_mib: int,
) -> None:
    # The same 24 GiB VM kind reports 23.5 GiB give or take what its kernel reserves.
    around = int(23.5 * GIB)
    below = profiles.profile_of(XEON | {"total_ram_bytes": around - apart_mib * MIB})
    above = profiles.profile_of(XEON | {"total_ram_bytes": around + apart_mib * MIB})

    assert below.key == above.key
    assert below.ram_gib == above.ram_gib == 24


@pytest.mark.parametrize(
    ("total_ram_bytes", "gib"),
    [
        (25_276_514_304, 24),  # the reference VM: 23.54 GiB of 24
        (16 * GIB - 300 * MIB, 16),
        (32 * GIB, 32),  # a total of exactly whole GiB stays that size
        (32 * GIB + MIB, 33),
    ],
)
def test_ram_groups_by_the_whole_gib_the_reported_total_is_just_under(
    total_ram_bytes: int, gib: int
) -> None:
    assert profiles.whole_gib(total_ram_bytes) == gib
    assert profiles.profile_of(XEON | {"total_ram_bytes": total_ram_bytes}).ram_gib == gib


@pytest.mark.parametrize("missing", [None, float("nan"), np.nan, pd.NA, pd.NaT])
def test_a_null_from_pandas_reads_as_unknown(missing: Any) -> None:
    row = XEON | {"cpu_vendor": missing, "cpu_isa": missing, "usable_cores": missing}

    profile = profiles.profile_of(row)

    assert (profile.cpu_isa, profile.usable_cores) == (None, None)
    assert profile.cpu_vendor == "Intel"  # read from the model name instead
    assert profile.key == profiles.profile_of(XEON | {"cpu_isa": None, "usable_cores": None}).key


def test_values_from_a_dataframe_give_the_same_key_as_plain_python_values() -> None:
    # A runs frame has NumPy scalars, floats for integer columns with NULLs, and NaN.
    runs = pd.DataFrame([XEON, OLDER])
    assert runs["usable_cores"].dtype == float

    assert profiles.profile_keys(runs) == [
        profiles.profile_of(XEON).key,
        profiles.profile_of(OLDER).key,
    ]


def test_versions_that_are_empty_or_not_installed_are_unknown() -> None:
    for missing in ("", "not installed"):
        profile = profiles.profile_of(XEON | {"tensorflow_version": missing})
        assert profile.tensorflow_version is None
        assert profile.label.endswith("TensorFlow unknown")


def test_a_run_that_did_not_record_its_cpu_is_not_determined() -> None:
    profile = profiles.profile_of(OLDER | {"cpu_model": "unknown"})

    assert not profile.determined
    assert profile.cpu_model is None and profile.cpu_vendor is None
    assert profile.label == "unknown machine (its runs did not record the CPU)"


# --- profiles of a runs table and the --machine option ----------------------------------


def test_the_profiles_of_a_runs_table_come_most_runs_first() -> None:
    runs = pd.DataFrame([XEON, EPYC, EPYC, XEON | {"hostname": "x"}, EPYC])

    found = profiles.profiles_in(runs)

    epyc, xeon = profiles.profile_of(EPYC), profiles.profile_of(XEON)
    assert found == {epyc.key: epyc, xeon.key: xeon}
    assert list(found) == [epyc.key, xeon.key]  # 3 runs before 2
    assert profiles.profile_keys(runs) == [xeon.key, epyc.key, epyc.key, xeon.key, epyc.key]
    assert profiles.profiles_in(runs.iloc[0:0]) == {}


def test_a_runs_table_without_some_profile_columns_reads_them_as_unknown() -> None:
    runs = pd.DataFrame([{"run_id": "r", "cpu_model": "AMD EPYC 7B13", "cpu_cores": 8}])

    (profile,) = profiles.profiles_in(runs).values()

    assert (profile.cpu_vendor, profile.cpu_model, profile.cores) == ("AMD", "AMD EPYC 7B13", 8)
    assert profile.tensorflow_version is None


def _known() -> dict[str, profiles.MachineProfile]:
    return profiles.profiles_in(pd.DataFrame([XEON, EPYC]))


def test_resolve_takes_a_key_or_any_unique_prefix_of_one() -> None:
    known = _known()
    xeon = profiles.profile_of(XEON)

    assert profiles.resolve(xeon.key, known) == xeon
    assert profiles.resolve(f"  {xeon.key.upper()} ", known) == xeon  # as typed
    shortest = next(
        n
        for n in range(1, profiles.KEY_LENGTH + 1)
        if sum(key.startswith(xeon.key[:n]) for key in known) == 1
    )
    assert profiles.resolve(xeon.key[:shortest], known) == xeon


def test_resolve_refuses_an_unknown_profile_listing_the_known_ones() -> None:
    known = _known()
    unknown = next(c for c in "0123456789abcdef" if not any(k.startswith(c) for k in known))

    with pytest.raises(StoreError) as refused:
        profiles.resolve(unknown, known)

    message = str(refused.value)
    assert message.startswith(f"no machine profile {unknown!r}; the known profiles are: ")
    for key, profile in known.items():
        assert f"{key} ({profile.label})" in message
    with pytest.raises(StoreError, match="no machine profile ''"):
        profiles.resolve("", known)
    with pytest.raises(StoreError, match="the known profiles are: none"):
        profiles.resolve("abc", {})


def test_resolve_refuses_an_ambiguous_prefix() -> None:
    # Two profiles whose keys start alike (found by varying the cores).
    candidates = [profiles.profile_of(XEON | {"cpu_cores": n}) for n in range(1, 64)]
    first = candidates[0]
    twin = next(p for p in candidates[1:] if p.key[0] == first.key[0])
    known = {first.key: first, twin.key: twin}

    with pytest.raises(StoreError) as refused:
        profiles.resolve(first.key[0], known)

    assert str(refused.value).startswith(
        f"machine profile {first.key[0]!r} is ambiguous: it starts 2 keys; give more of the key."
    )
    assert first.key in str(refused.value) and twin.key in str(refused.value)


# The device facts of the bundled H200 runs (data/gpu/), as a GPU run stores them.
H200 = {
    "memory_target": "gpu_memory",
    "gpu_name": "NVIDIA H200",
    "gpu_total_bytes": 150_109_880_320,
    "gpu_compute_capability": "9.0",
    "gpu_driver": "580.159.04",
    "cuda_version": "13.0",
    "cudnn_version": "9.19.0",
    "alloc_conf": "",
    "framework": "torch",
    "framework_version": "2.11.0+cu130",
}


def test_a_gpu_profile_is_keyed_by_its_devices_facts_alone() -> None:
    profile = profiles.profile_of(H200)
    key = profile.key

    assert profile.gpu is not None and profile.target.label == "GPU memory"
    assert profile.label == (
        "NVIDIA H200 (139.80 GiB usable), compute 9.0, CUDA 13.0, PyTorch 2.11, allocator default"
    )
    # The host it ran on is not part of a GPU profile; every device fact is.
    assert profiles.profile_of(H200 | {"hostname": "other", "cpu_model": "AMD EPYC"}).key == key
    changed = {
        "gpu_name": "NVIDIA H100 80GB HBM3",
        "gpu_total_bytes": 85_017_624_576,
        "gpu_compute_capability": "8.0",
        "gpu_driver": "570.86.15",
        "cuda_version": "12.8",
        "cudnn_version": "9.7.1",
        "alloc_conf": "expandable_segments:True",
        "framework_version": "2.10.0+cu128",
    }
    keys = {profiles.profile_of(H200 | {name: value}).key for name, value in changed.items()}
    assert key not in keys and len(keys) == len(changed)
    assert profile.facts() == {
        "profile": key,
        "machine": profile.label,
        "GPU": "NVIDIA H200",
        "usable memory": "139.80 GiB",
        "compute capability": "9.0",
        "driver": "580.159.04",
        "CUDA": "13.0",
        "cuDNN": "9.19.0",
        "framework": "torch 2.11.0+cu130",
        "PYTORCH_CUDA_ALLOC_CONF": "(the allocator's default)",
    }
    # Never the key of a host-RAM profile with the same framework.
    assert key != profiles.profile_of(XEON | {"framework": "torch"}).key
