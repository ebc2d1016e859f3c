"""Machine profiles as the pages show them: the machines table, machines compared, the
selector's choices, and what a profile without models lacks.

The runs below come from two virtual machines that are both called ``vm``: an
Intel Xeon with AVX-512 and an AMD EPYC with AVX2 only. They are two machines
because their profiles differ, whatever their host names say.
"""

from __future__ import annotations

import pandas as pd
import pytest

from core import profiles
from core.profiles import profile_of
from modeling.machines import ASKED, BUNDLED, LATEST, THIS_MACHINE, MachineChoice
from presentation import browse, charts_sweeps, machine_shortfall, machines, machines_compared
from presentation.machine_shortfall import ProfileRuns
from presentation.text import WORD_JOINER
from tests.conftest import build_record

GIB = 2**30
INTEL = {"cpu_vendor": "Intel", "cpu_model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "cpu_isa": "avx512"}
AMD = {"cpu_vendor": "AMD", "cpu_model": "AMD EPYC 7B13", "cpu_isa": "avx2"}
BOTH = {"hostname": "vm", "cpu_cores": 2, "usable_cores": 2, "intra_op_threads": 2}
INTEL_KEY = profile_of(build_record(**INTEL, **BOTH).row()).key
AMD_KEY = profile_of(build_record(**AMD, **BOTH).row()).key


def cube(machine: dict, side: int, batch: int, peak_gib: float, **overrides) -> dict:
    """One U-Net run of a ``side``^3 cube at ``batch`` on ``machine``, peaking at ``peak_gib``."""
    values = {"depth": side, "height": side, "width": side, "batch_size": batch}
    values |= {"peak_hwm_bytes": int(peak_gib * GIB)}
    return build_record(**(BOTH | machine | values | overrides)).row()


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


@pytest.fixture
def two_machines() -> pd.DataFrame:
    """32^3 at batch 1 measured on both (twice on the Intel), 64^3 on both, 96^3 on one."""
    return frame(
        cube(INTEL, 32, 1, 1.0),
        cube(INTEL, 32, 1, 1.2),
        cube(INTEL, 64, 1, 2.0),
        cube(INTEL, 96, 1, 4.0),
        cube(AMD, 32, 1, 2.9),
        cube(AMD, 64, 1, 5.0),
        cube(AMD, 64, 2, 9.0, status="oom", peak_hwm_bytes=None),
    )


# --- the machines table ----------------------------------------------------------------


def test_two_vms_called_vm_are_two_machines_one_row_per_profile(two_machines):
    table = machines_compared.profiles_table(two_machines, here_key=AMD_KEY).set_index("profile")

    assert list(table.index) == [INTEL_KEY, AMD_KEY]  # most runs first
    intel, amd = table.loc[INTEL_KEY], table.loc[AMD_KEY]
    assert intel["machine"] == "Intel Xeon, AVX-512, 2 cores, TensorFlow 2.16"
    assert amd["machine"] == "AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16"
    assert (intel["hosts"], amd["hosts"]) == ("vm", "vm")
    assert (intel["runs"], intel["ok runs"]) == (4, 4)
    assert (amd["runs"], amd["ok runs"]) == (3, 2)
    assert (intel["this machine"], amd["this machine"]) == (False, True)
    assert amd["instruction set"] == "AVX2" and amd["RAM (GiB)"] == "32"
    # No CPU generation recorded by these runs (schema 7 facts); build_record's 400 MiB baseline.
    assert (amd["CPU family"], amd["CPU model number"], amd["CPU stepping"]) == ("unknown",) * 3
    assert amd["baseline (GiB)"] == pytest.approx(400 / 1024)


def test_facts_an_older_run_did_not_record_read_unknown():
    older = cube(INTEL, 32, 1, 1.0, cpu_isa=None, usable_cores=None, intra_op_threads=None)
    [row] = machines_compared.profiles_table(frame(older)).to_dict("records")

    assert row["instruction set"] == "unknown"
    assert (row["usable cores"], row["intra-op threads"]) == ("unknown", "unknown")
    assert row["CPUs"] == "2"
    assert "this machine" not in row  # no column when the page does not say which is here


def test_no_runs_make_an_empty_table():
    assert machines_compared.profiles_table(pd.DataFrame()).empty


# --- machines compared -----------------------------------------------------------------


def test_configurations_measured_on_both_machines_are_compared_by_their_median_peak(
    two_machines,
):
    compared = machines_compared.compared(two_machines)

    shown = compared[["image", "batch_size", "machine_profile", "peak_gib", "ratio"]]
    assert shown.values.tolist() == [
        ["32×32×32", 1, INTEL_KEY, pytest.approx(1.1), pytest.approx(1.0)],  # median of two
        ["32×32×32", 1, AMD_KEY, pytest.approx(2.9), pytest.approx(2.9 / 1.1)],
        ["64×64×64", 1, INTEL_KEY, pytest.approx(2.0), pytest.approx(1.0)],
        ["64×64×64", 1, AMD_KEY, pytest.approx(5.0), pytest.approx(2.5)],
    ]
    # 96^3 was measured on the Intel only, and 64^3 at batch 2 only ran out of memory.
    assert compared["runs"].tolist() == [2, 1, 1, 1]
    assert compared["reference"].tolist() == [True, False, True, False]
    assert set(compared["machine"]) == {
        "Intel Xeon, AVX-512, 2 cores, TensorFlow 2.16",
        "AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16",
    }
    assert compared["configuration"].iloc[0] == "32×32×32 batch 1, 16 filters, float32, 3 steps"


def test_the_ratios_can_be_against_another_reference(two_machines):
    compared = machines_compared.compared(two_machines, reference=AMD_KEY)

    assert compared["machine_profile"].tolist() == [AMD_KEY, INTEL_KEY] * 2  # reference first
    assert compared["ratio"].tolist() == pytest.approx([1.0, 1.1 / 2.9, 1.0, 2.0 / 5.0])
    # A reference that measured none of them falls back to the one with the most runs.
    assert machines_compared.compared(two_machines, reference="0123456789")["ratio"].iloc[1] > 2


def test_another_step_count_or_network_is_another_configuration(two_machines):
    runs = frame(
        cube(INTEL, 32, 1, 1.0, steps=6),
        cube(AMD, 32, 1, 2.0, steps=3),
        cube(INTEL, 32, 1, 1.0, base_filters=8),
        cube(AMD, 32, 1, 2.0, base_filters=16),
    )

    assert machines_compared.compared(runs).empty


def test_several_workloads_name_theirs_in_the_configuration(two_machines):
    alexnet = {"workload": "alexnet", "depth": None, "base_filters": None, "levels": None}
    alexnet |= {"upsampling": None, "in_channels": 3, "classes": 1000}
    square = {"height": 224, "width": 224, "batch_size": 4}
    runs = pd.concat(
        [
            two_machines,
            frame(
                build_record(**(BOTH | INTEL | alexnet | square), peak_hwm_bytes=GIB).row(),
                build_record(**(BOTH | AMD | alexnet | square), peak_hwm_bytes=3 * GIB).row(),
            ),
        ],
        ignore_index=True,
    )
    compared = machines_compared.compared(runs)

    assert compared["configuration"].tolist()[::2] == [
        "unet3d 32×32×32 batch 1, 16 filters, float32, 3 steps",
        "unet3d 64×64×64 batch 1, 16 filters, float32, 3 steps",
        "alexnet 224 batch 4, 1000 classes, float32, 3 steps",
    ]
    assert compared["side"].tolist()[::2] == [32.0, 64.0, 224.0]


def test_side_by_side_puts_each_machines_peak_and_ratio_in_a_column(two_machines):
    table = machines_compared.side_by_side(machines_compared.compared(two_machines))

    intel = "Intel Xeon, AVX-512, 2 cores, TensorFlow 2.16"
    amd = "AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16"
    assert list(table.columns) == [
        "workload",
        "image",
        "batch",
        "network",
        "steps",
        f"{intel}: peak (GiB)",
        f"{amd}: peak (GiB)",
        f"{amd}: x reference",
    ]
    assert table["image"].tolist() == ["32×32×32", "64×64×64"]
    assert table[f"{amd}: x reference"].tolist() == [2.64, 2.5]


def test_with_one_machine_there_is_nothing_to_compare(two_machines):
    intel_only = two_machines[two_machines["cpu_vendor"] == "Intel"]

    assert machines_compared.compared(intel_only).empty
    assert (
        list(machines_compared.compared(intel_only).columns) == machines_compared.COMPARED_COLUMNS
    )
    assert machines_compared.side_by_side(machines_compared.compared(intel_only)).empty


def test_two_profiles_with_one_label_are_told_apart_by_their_key():
    more_ram = {**INTEL, "total_ram_bytes": 64 * GIB}  # the label does not name the RAM
    runs = frame(cube(INTEL, 32, 1, 1.0), cube(more_ram, 32, 1, 1.0))
    compared = machines_compared.compared(runs)

    keys = compared["machine_profile"].tolist()
    assert compared["machine"].tolist() == [
        f"Intel Xeon, AVX-512, 2 cores, TensorFlow 2.16 ({key})" for key in keys
    ]


def test_the_chart_draws_one_colour_per_machine_named_by_its_label(two_machines):
    compared = machines_compared.compared(two_machines)
    chart = charts_sweeps.machines_compared(compared).to_dict()
    layers = {layer["name"]: layer for layer in chart["layer"]}

    peaks = layers["peaks"]["encoding"]
    assert peaks["color"]["field"] == "machine"
    assert peaks["color"]["legend"]["labelLimit"] == 0  # long labels are not cut
    assert peaks["y"]["sort"] == list(dict.fromkeys(compared["configuration"]))
    assert peaks["x"]["field"] == "peak_gib"
    assert chart["height"] == {"step": charts_sweeps.CONFIGURATION_ROW_PX}  # grows with them
    assert layers["spread"]["mark"]["type"] == "rule"
    drawn = chart["datasets"][chart["data"]["name"]]
    assert {row["machine"] for row in drawn} == set(compared["machine"])


# --- the machine selector ---------------------------------------------------------------

HERE = profile_of(build_record(**AMD, **BOTH).row())
INTEL_PROFILE = profile_of(build_record(**INTEL, **BOTH).row())


def test_this_machine_is_always_offered_even_without_runs():
    bundled = MachineChoice(INTEL_KEY, INTEL_PROFILE, BUNDLED, note="This machine has no runs.")
    known = {INTEL_KEY: INTEL_PROFILE}

    default = machines.default_choice(bundled, known, HERE)
    options = machines.offered(known, HERE, default)

    assert default is bundled
    assert list(options) == [INTEL_KEY, AMD_KEY]
    assert machines.option_label(AMD_KEY, options, AMD_KEY) == (
        "AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16 — this machine"
    )
    assert machines.choice_for(INTEL_KEY, default, options, HERE) is bundled
    # This machine, without models, is answered as `memplan size --machine AMD_KEY` answers it:
    # by its default (`application.machines.asked_profile`).
    assert machines.choice_for(AMD_KEY, default, options, HERE) is bundled


def test_a_default_from_another_machine_is_this_machines_option_and_its_profile_by_name_not():
    # The reference answering for this machine, which has no models: widened (a transfer).
    widened = MachineChoice(INTEL_KEY, INTEL_PROFILE, BUNDLED, transfer=object())  # type: ignore[arg-type]
    known = {INTEL_KEY: INTEL_PROFILE}
    options = machines.offered(known, HERE, widened)

    assert machines.default_option(widened, HERE) == AMD_KEY  # this machine's
    assert machines.choice_for(AMD_KEY, widened, options, HERE) is widened
    # The reference by name answers for its own machine, as `--machine` does: not widened.
    named = machines.choice_for(INTEL_KEY, widened, options, HERE)
    assert (named.key, named.reason, named.transfer) == (INTEL_KEY, ASKED, None)


def test_without_models_anywhere_the_page_opens_on_this_machine_or_the_most_runs():
    known = {INTEL_KEY: INTEL_PROFILE}

    assert machines.default_choice(None, known, HERE).key == INTEL_KEY
    assert machines.default_choice(None, known, HERE).reason == machines.MOST_RUNS
    assert machines.default_choice(None, known | {AMD_KEY: HERE}, HERE).reason == THIS_MACHINE
    assert machines.default_choice(None, {}, HERE).key == AMD_KEY


def test_an_evaluation_of_several_machines_is_offered_as_one_option():
    mixed = MachineChoice(None, None, LATEST)
    options = machines.offered({INTEL_KEY: INTEL_PROFILE}, HERE, mixed)

    assert machines.MIXED in options
    assert machines.option_label(machines.MIXED, options, AMD_KEY) == "runs of several machines"
    assert machines.choice_for(machines.MIXED, mixed, options, HERE) is mixed


def test_every_answer_names_its_machine_in_plain_words():
    here = MachineChoice(AMD_KEY, HERE, THIS_MACHINE)
    chosen = MachineChoice(INTEL_KEY, INTEL_PROFILE, ASKED)

    assert machines.answer_words(here) == (
        "for AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16 — this machine"
    )
    assert machines.answer_words(chosen).endswith("— as chosen")


def test_a_sentence_with_commands_shows_its_text_escaped_and_its_commands_as_code():
    sentence = "This machine (*Evil* [CPU](https://x.example)) has no runs: `python -m x` does it."
    shown = machines.markdown(sentence)

    assert shown.startswith(r"This machine \(\*Evil\* \[CPU\]\(https\:" + WORD_JOINER)
    assert "`python -m x`" in shown
    assert "[CPU](" not in shown


# --- what a profile without models lacks -------------------------------------------------

REFERENCE = {(side, batch) for side in (16, 32, 48, 64, 80, 96, 112) for batch in (1, 2, 4)}


def test_a_machine_without_runs_gets_the_smallest_points_the_reference_measured():
    found = machine_shortfall.shortfall(
        ProfileRuns("unet3d", AMD_KEY, HERE.label, 0, here=True), reference=REFERENCE
    )

    assert found.missing == 10
    assert (found.sweep.image_sizes, found.sweep.batch_sizes) == ((16, 32, 48, 64, 80), (1, 2))
    assert found.sweep.new_points == 10
    assert found.sweep.command() == (
        "memplan sweep --workload unet3d --image-sizes 16 32 48 64 80 --batch-sizes 1 2"
    )
    assert found.message().startswith(
        f"AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16 (profile {AMD_KEY}) has no measured "
        "run of the 3D U-Net (IntelAI/unet), so no models of its own: a fit needs at least 10"
    )
    assert f"`memplan evaluate --workload unet3d --machine {AMD_KEY}`" in (found.message())
    assert "must be measured on that machine" not in found.message()


def test_points_already_measured_count_and_are_not_measured_again():
    measured = frozenset({(16, 1), (32, 1), (48, 1), (64, 1)})
    found = machine_shortfall.shortfall(
        ProfileRuns("unet3d", AMD_KEY, HERE.label, 4, here=True, measured=measured),
        reference=REFERENCE,
    )

    assert found.message().startswith(
        f"AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.16 (profile {AMD_KEY}) has 4 distinct "
        "measured configuration(s) of the 3D U-Net (IntelAI/unet); a fit needs at least 10, "
        "so 6 more are missing."
    )
    # Sides 16 to 80 at batches 1 and 2: four of those ten points are done, six are new.
    assert (found.sweep.image_sizes, found.sweep.batch_sizes) == ((16, 32, 48, 64, 80), (1, 2))
    assert found.sweep.new_points == 6


def test_the_calibration_grids_missing_points_are_the_sweep_when_there_is_one():
    missing = [("32", 1), ("32", 4), ("64", 1), ("64", 4), ("96", 1), ("96", 4)]
    found = machine_shortfall.shortfall(
        ProfileRuns("unet3d", AMD_KEY, HERE.label, 4, here=True),
        calibration_missing=missing,
        calibration_minutes=12.4,
        reference=REFERENCE,
    )

    assert (found.sweep.image_sizes, found.sweep.batch_sizes) == ((32, 64, 96), (1, 4))
    assert found.sweep.source == machine_shortfall.FROM_CALIBRATION
    assert "about 12 min where it was measured" in found.message()
    assert "`memplan calibrate --workload unet3d` does both" in found.message()


def test_another_machines_runs_must_be_measured_there():
    found = machine_shortfall.shortfall(
        ProfileRuns("alexnet", INTEL_KEY, INTEL_PROFILE.label, 0, here=False)
    )

    assert "must be measured on that machine (Intel Xeon, AVX-512" in found.message()
    assert found.sweep.source == machine_shortfall.FROM_DEFAULTS  # no machine measured the AlexNet
    assert found.sweep.image_sizes == (96, 128, 160, 192, 224)
    assert found.sweep.command(db="/data/memplan.duckdb").endswith(
        "--batch-sizes 1 2 --db /data/memplan.duckdb"
    )


def test_enough_runs_without_models_need_only_the_fit():
    found = machine_shortfall.shortfall(
        ProfileRuns("unet3d", INTEL_KEY, INTEL_PROFILE.label, 39, here=False)
    )

    assert found.sweep is None
    assert "39 distinct measured configurations" in found.message()
    assert found.evaluate_command("db.duckdb") == (
        f"memplan evaluate --workload unet3d --machine {INTEL_KEY} --db db.duckdb"
    )


def test_the_default_network_cube_points_are_what_a_calibration_grid_holds(two_machines):
    runs = pd.concat(
        [two_machines, frame(cube(AMD, 32, 2, 3.0, base_filters=8), cube(AMD, 16, 1, 1.0))],
        ignore_index=True,
    )
    amd = machines.runs_on(runs, AMD_KEY)

    # Not the 8-filter network, not the run that ran out of memory.
    assert machine_shortfall.default_network_points(amd, "unet3d") == {(32, 1), (64, 1), (16, 1)}
    assert machine_shortfall.default_network_points(amd, "alexnet") == set()


def test_runs_carry_their_profile_and_can_be_filtered_by_it(two_machines):
    runs = profiles.with_keys(two_machines)

    assert runs[browse.MACHINE].value_counts().to_dict() == {INTEL_KEY: 4, AMD_KEY: 3}
    assert len(machines.runs_on(runs, AMD_KEY)) == 3
    assert len(machines.runs_on(runs, machines.MIXED)) == 7
