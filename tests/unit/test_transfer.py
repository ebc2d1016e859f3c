"""Answers for a profile without models (`modeling.transfer`): which profile answers, and how
much its bound is widened, from the spread measured between other profiles."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from application import sizing, widening
from core import profiles
from modeling import transfer
from modeling.errors import ModelingError
from modeling.machines import BUNDLED, MachineChoice
from tests.conftest import build_record

GIB = 2**30
# The bundled kinds of machine, as their runs recorded them (2 cores each).
XEON = {"cpu_vendor": "Intel", "cpu_model": "Intel Xeon", "cpu_isa": "avx512", "cpu_cores": 2}
EPYC_512 = {"cpu_vendor": "AMD", "cpu_model": "AMD EPYC", "cpu_isa": "avx512_bf16", "cpu_cores": 2}
EPYC_AVX2 = EPYC_512 | {"cpu_isa": "avx2"}
EPYC_AVX2_OFF = EPYC_AVX2 | {"onednn_enabled": False}
# An AVX-512 EPYC with oneDNN off: no bundled kind, and unlike every one in two first facts.
OFF_512 = EPYC_512 | {"onednn_enabled": False}
FACTS = {"usable_cores": 2, "intra_op_threads": 2}


def _profile(facts: dict) -> profiles.MachineProfile:
    return profiles.profile_of(build_record(**FACTS, **facts).row())


def _known(*kinds: dict) -> dict[str, profiles.MachineProfile]:
    found = [_profile(kind) for kind in kinds]
    return {profile.key: profile for profile in found}


def test_the_same_onednn_state_comes_before_the_same_instruction_set() -> None:
    asked = _profile(EPYC_AVX2)
    candidates = _known(EPYC_AVX2_OFF, EPYC_512)

    nearest = transfer.nearest_profile(asked, candidates)

    assert nearest.key == _profile(EPYC_512).key
    assert nearest.reasons[:3] == (
        "oneDNN on in both",
        "instruction set AVX-512 BF16, not AVX2",
        "CPU vendor AMD in both",
    )
    assert nearest.first_differences == ("instruction set",)
    assert nearest.sentence().startswith(f"the nearest measured profile {nearest.key} (AMD EPYC")


def test_then_the_vendor_then_the_cpu_generation_then_the_cores() -> None:
    asked = _profile(EPYC_512 | {"cpu_family": 26, "cpu_model_number": 2})
    xeon = _profile(XEON | {"cpu_isa": "avx512_bf16"})
    older_epyc = _profile(EPYC_512 | {"cpu_family": 25, "cpu_model_number": 1})
    unrecorded_epyc = _profile(EPYC_512)
    four_cores = _profile(EPYC_512 | {"cpu_family": 26, "cpu_model_number": 2, "cpu_cores": 4})

    def nearest(*found: profiles.MachineProfile) -> str:
        return transfer.nearest_profile(asked, {p.key: p for p in found}).key

    assert nearest(xeon, older_epyc) == older_epyc.key  # the vendor
    assert nearest(older_epyc, unrecorded_epyc) == unrecorded_epyc.key  # unknown before different
    assert nearest(four_cores, unrecorded_epyc) == four_cores.key  # the generation before cores
    assert (
        "CPU generation family 25, model 1, not family 26, model 2"
        in transfer.nearest_profile(asked, {older_epyc.key: older_epyc}).reasons
    )


def test_a_tie_keeps_the_candidates_order_and_a_profile_never_answers_for_itself() -> None:
    asked = _profile(EPYC_512)
    first, second = (
        _profile(XEON | {"cpu_isa": "avx512_bf16"}),
        _profile(XEON | {"cpu_isa": "avx512_bf16", "cpu_model": "Intel Xeon Gold"}),
    )

    assert transfer.nearest_profile(asked, {first.key: first, second.key: second}).key == first.key
    assert transfer.nearest_profile(asked, {second.key: second, first.key: first}).key == second.key
    assert transfer.nearest_profile(asked, {asked.key: asked}) is None


@pytest.mark.parametrize(
    ("ratios", "factor"),
    [
        ([1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09], 1.09),  # ceil(10 * 0.9) = 9th
        ([1.0 + i / 100 for i in range(1, 20)], 1.18),  # ceil(20 * 0.9) = 18th of 19
        ([1.2, 1.5], 1.5),  # too few for a quantile: the largest
        ([0.9, 0.95, 0.97], 1.0),  # the answering profile peaks higher: never narrower
    ],
)
def test_the_widening_is_the_conformal_upper_quantile_of_the_ratios(
    ratios: list[float], factor: float
) -> None:
    assert transfer.widening_factor(pd.Series(ratios)) == pytest.approx(factor)


def _runs(kind: dict, peaks_gib: dict[int, float]) -> list[dict]:
    """One ok run per image side (batch 1) on a machine of ``kind``."""
    return [
        build_record(
            **FACTS, **kind, depth=side, height=side, width=side, peak_hwm_bytes=int(gib * GIB)
        ).row()
        for side, gib in peaks_gib.items()
    ]


def test_pair_ratios_compare_the_configurations_both_profiles_measured() -> None:
    runs = pd.DataFrame(
        _runs(XEON, {32: 1.0, 48: 1.2, 64: 1.5}) + _runs(EPYC_512, {48: 1.32, 64: 1.5, 80: 2.0})
    )

    ratios = transfer.pair_ratios(runs, _profile(EPYC_512).key, _profile(XEON).key)

    assert list(ratios.round(3)) == [1.0, 1.1]  # 64^3, then 48^3: sorted


def _held_out(
    peaks: dict[str, dict[int, float]], held_out: dict
) -> tuple[transfer.Nearest, transfer.Widening]:
    """``held_out``'s answer from the other kinds of ``peaks`` and its widening, as the
    benchmark makes them: the held-out profile is never part of its own evidence."""
    runs = _frame(peaks)
    known = profiles.profiles_in(runs)
    asked = _profile(held_out)
    answer = transfer.nearest_profile(asked, {k: p for k, p in known.items() if k != asked.key})
    return answer, transfer.widening_for(runs, known, answer, excluded={asked.key})


# Two configurations per kind of machine, GiB by side; the oneDNN-off EPYC peaks 2-3x higher.
PEAKS = {
    "xeon": {32: 1.0, 48: 1.0},
    "epyc_512": {32: 1.05, 48: 1.1},
    "avx2": {32: 1.2, 48: 1.3},
    "off": {32: 2.0, 48: 3.0},
}


def test_the_widening_comes_from_other_pairs_that_differ_as_the_answer_does() -> None:
    answer, widening = _held_out(PEAKS, EPYC_AVX2)

    assert answer.key == _profile(EPYC_512).key and answer.first_differences == ("instruction set",)
    assert _profile(EPYC_AVX2).key not in {key for pair in widening.pairs for key in pair}
    # Xeon and AVX-512 EPYC answer for each other (both differ in the instruction set); the
    # oneDNN-off EPYC's pair differs in oneDNN, so its 2-3x ratios are not this answer's evidence.
    assert widening.matched
    assert set(widening.pairs) == {
        (_profile(XEON).key, _profile(EPYC_512).key),
        (_profile(EPYC_512).key, _profile(XEON).key),
    }
    assert widening.factor == pytest.approx(1.1)
    assert widening.sentence().startswith("bound widened x1.100: the 90% upper quantile of 4 ")


def test_a_first_fact_no_measured_pair_differs_in_gives_no_bound_and_says_why() -> None:
    # The leave-one-profile-out of the oneDNN-off EPYC: no other pair differs in oneDNN, and
    # the pairs that differ in the instruction set alone spread x1.06 where its peaks lay
    # 1.01-2.50x above (docs/transfer.md): their spread is no evidence for this one.
    answer, widening = _held_out(
        {name: PEAKS[name] for name in ("xeon", "epyc_512", "off")}, EPYC_AVX2_OFF
    )

    assert answer.first_differences == ("oneDNN", "instruction set")
    assert isinstance(widening, transfer.Unbounded)
    assert widening.facts == ("oneDNN",) and widening.factor == math.inf
    assert widening.sentence().startswith(
        "no bound can be given: no measured pair of other profiles differs in oneDNN (the "
        "measured pairs: "
    )


def _transfer(peaks: dict[str, dict[int, float]], asked: dict, chosen: dict) -> transfer.Transfer:
    """``chosen`` answering for ``asked`` (a machine without runs) among the kinds of ``peaks``."""
    runs = _frame(peaks)
    known = profiles.profiles_in(runs)
    return transfer.transfer_for(runs, known, _profile(asked), _profile(chosen).key, "chosen")


def _frame(peaks: dict[str, dict[int, float]]) -> pd.DataFrame:
    kinds = {"xeon": XEON, "epyc_512": EPYC_512, "avx2": EPYC_AVX2, "off": EPYC_AVX2_OFF}
    return pd.DataFrame(
        [row for name, by_side in peaks.items() for row in _runs(kinds[name], by_side)]
    )


def test_a_transfer_without_a_bound_refuses_in_words_naming_calibrate() -> None:
    moved = _transfer({"xeon": PEAKS["xeon"], "epyc_512": PEAKS["epyc_512"]}, OFF_512, XEON)

    assert not moved.bounded and moved.factor == math.inf
    key = _profile(XEON).key
    assert "no bound can be given: no measured pair of other profiles differs in oneDNN" in (
        moved.sentence()
    )
    refusal = moved.refusal()
    assert refusal.startswith(f"no bound can be given for this machine ({_profile(OFF_512).label}")
    assert f"the profile that would answer, {key} (" in refusal
    # Only the fact no pair spans: the instruction set, which differs too, the pairs measured.
    assert "differs from it (oneDNN on, not off), and no measured pair of other profiles " in (
        refusal
    )
    assert "`memplan calibrate` measures it and fits its models" in refusal
    assert refusal.endswith(f"`--machine {key}` answers for that profile's own machine instead")


def test_facts_measured_apart_but_never_together_multiply_their_own_widenings() -> None:
    # Asked: oneDNN off, AVX-512 BF16; answered by the oneDNN-on AVX2 EPYC. No pair differs in
    # both, but the oneDNN-off EPYC over the AVX2 one differs in oneDNN alone (2.0/1.2, 3.0/1.3),
    # and the AVX2 and AVX-512 EPYCs in the instruction set alone (largest 1.3/1.1).
    moved = _transfer(PEAKS, OFF_512, EPYC_AVX2)
    widening = moved.widening

    assert isinstance(widening, transfer.Compounded) and moved.bounded
    assert [part.fact for part in widening.parts] == ["oneDNN", "instruction set"]
    assert [(a, b) for a, b in widening.parts[0].pairs] == [
        (_profile(EPYC_AVX2_OFF).key, _profile(EPYC_AVX2).key)
    ]
    assert widening.parts[0].factor == pytest.approx(3.0 / 1.3)
    assert widening.parts[1].factor == pytest.approx(1.3 / 1.1)
    assert moved.factor == pytest.approx(3.0 / 1.3 * 1.3 / 1.1)
    assert widening.sentence().startswith(
        "bound widened x2.727: no measured pair of other profiles differs as these two do "
        "(oneDNN and instruction set), so each fact's own widening multiplies: oneDNN x2.308, "
    )


def test_an_answer_alike_in_the_first_facts_widens_by_every_pair_where_no_pair_is_alike() -> None:
    asked = EPYC_512 | {"cpu_family": 26, "cpu_model_number": 2}  # another generation only
    moved = _transfer(PEAKS, asked, EPYC_512)

    assert moved.nearest.first_differences == ()
    assert isinstance(moved.widening, transfer.Widening) and not moved.widening.matched
    assert len(moved.widening.pairs) == 4
    assert "every pair (none differs as these two do)" in moved.sentence()


def test_without_two_other_profiles_measured_alike_the_bound_is_not_widened_and_says_so() -> None:
    # A database of one profile: nothing measured between machines in any framework.
    moved = _transfer({"xeon": PEAKS["xeon"]}, EPYC_512, XEON)

    assert moved.widening is None and moved.bounded and moved.factor == 1.0
    assert moved.sentence().endswith(
        "bound not widened: no configuration was measured on two other profiles"
    )


def test_a_framework_of_one_profile_gives_no_bound_and_names_its_calibrate() -> None:
    # PyTorch bundled on one EPYC beside four TensorFlow profiles: their spread is no
    # evidence for PyTorch's, so an unmeasured machine gets no bound (issue 41, point 4).
    torch = {"framework": "torch", "framework_version": "2.13.0", "torch_intra_op_threads": 2}
    own = pd.DataFrame(_runs(EPYC_512 | torch, PEAKS["epyc_512"]))
    runs = pd.concat([_frame(PEAKS), own], ignore_index=True)
    known = profiles.profiles_in(runs)
    asked = _profile(XEON | torch)

    moved = transfer.transfer_for(runs, known, asked, _profile(EPYC_512 | torch).key, "chosen")

    assert not moved.bounded
    assert "`memplan calibrate --framework torch` measures it" in moved.refusal()
    with pytest.raises(ModelingError, match="no two other profiles of this framework"):
        widening.with_transfer([], moved)


def test_no_path_answers_from_a_transfer_without_a_bound() -> None:
    moved = _transfer({"xeon": PEAKS["xeon"], "epyc_512": PEAKS["epyc_512"]}, OFF_512, XEON)
    note = "This machine has no unet3d runs: `memplan calibrate --workload unet3d` measures them."
    choice = MachineChoice(moved.nearest.key, moved.nearest.profile, BUNDLED, note, moved)

    with pytest.raises(sizing.SizingError) as refused:
        sizing.models_of("unet3d", choice, sizing.Loaded([], pd.DataFrame()))
    with pytest.raises(ModelingError, match="^no bound can be given for this machine"):
        widening.with_transfer([], moved)

    assert str(refused.value) == f"{moved.refusal()}. {note}"


def test_where_no_profiles_nearest_differs_in_a_fact_the_pairs_across_it_are_the_evidence() -> None:
    # Two oneDNN-off profiles are each other's nearest, and the oneDNN-on ones each other's:
    # no nearest pair differs in oneDNN, yet the AVX2 EPYC measured it both ways, and so did
    # the AVX-512 one (the bundled family 26 EPYC's grid with oneDNN off).
    runs = pd.DataFrame(
        _runs(EPYC_512, {32: 1.0, 48: 1.1})
        + _runs(EPYC_AVX2, {32: 1.2, 48: 1.3})
        + _runs(EPYC_AVX2_OFF, {32: 2.0, 48: 3.0})
        + _runs(OFF_512, {32: 2.2, 48: 3.5})
    )
    known = profiles.profiles_in(runs)
    asked = _profile(XEON | {"onednn_enabled": False})  # answered by the AVX-512 EPYC

    nearest = {(p.measured, p.answering) for p in transfer.measured_pairs(runs, known)}
    moved = transfer.transfer_for(runs, known, asked, _profile(EPYC_512).key, "chosen")

    assert all(
        _profile(EPYC_AVX2_OFF).key not in pair or _profile(OFF_512).key in pair for pair in nearest
    )
    widening = moved.widening
    assert isinstance(widening, transfer.Compounded) and moved.bounded
    (oned,) = [part for part in widening.parts if part.fact == "oneDNN"]
    assert (_profile(EPYC_AVX2_OFF).key, _profile(EPYC_AVX2).key) in oned.pairs
    assert (_profile(OFF_512).key, _profile(EPYC_512).key) in oned.pairs
    # Fewer than 9 ratios: the largest, the AVX-512 EPYC's 48^3 off over on.
    assert oned.factor == pytest.approx(3.5 / 1.1)
