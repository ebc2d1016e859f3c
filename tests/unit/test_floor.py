"""The measurement floor from stored runs: sampled-vs-high-water gap and run-to-run spread."""

import pandas as pd
import pytest

from benchmarks import measurement_floor
from profiling.floor import (
    MIB,
    largest_spread_pct,
    point_label,
    repeat_spreads,
    sampling_gap,
)
from tests.conftest import build_record


def _runs(*records) -> pd.DataFrame:
    return pd.DataFrame([record.row() for record in records])


def test_the_gap_is_the_high_water_mark_minus_the_sampled_peak() -> None:
    runs = _runs(
        build_record(
            depth=32, height=32, width=32, peak_hwm_bytes=1000 * MIB, peak_sampled_bytes=1000 * MIB
        ),
        build_record(
            depth=48, height=48, width=48, peak_hwm_bytes=1000 * MIB, peak_sampled_bytes=990 * MIB
        ),
        build_record(
            depth=64,
            height=64,
            width=64,
            batch_size=2,
            peak_hwm_bytes=2000 * MIB,
            peak_sampled_bytes=1960 * MIB,
        ),
    )
    gap = sampling_gap(runs)
    assert gap is not None
    assert gap.n_runs == 3
    assert gap.median_mib == pytest.approx(10.0)
    assert gap.max_mib == pytest.approx(40.0)
    assert gap.min_mib == pytest.approx(0.0)
    assert gap.median_pct == pytest.approx(1.0)
    assert gap.max_pct == pytest.approx(2.0)
    assert gap.worst_point == "64^3 batch 2"


def test_runs_that_did_not_finish_or_lack_a_peak_are_left_out_of_the_gap() -> None:
    runs = _runs(
        build_record(peak_hwm_bytes=1000 * MIB, peak_sampled_bytes=900 * MIB, status="oom"),
        build_record(peak_hwm_bytes=None, peak_sampled_bytes=900 * MIB),
        build_record(peak_hwm_bytes=1000 * MIB, peak_sampled_bytes=995 * MIB),
    )
    gap = sampling_gap(runs)
    assert gap is not None and gap.n_runs == 1
    assert gap.max_mib == pytest.approx(5.0)


def test_no_usable_run_means_no_gap() -> None:
    assert sampling_gap(_runs(build_record(status="skipped", peak_hwm_bytes=None))) is None


def test_repeated_points_report_their_spread_and_single_points_do_not() -> None:
    runs = _runs(
        *(
            build_record(
                batch_size=2,
                repeat=i,
                peak_hwm_bytes=peak * MIB,
                peak_sampled_bytes=(peak - 10) * MIB,
            )
            for i, peak in enumerate((1000, 1050, 1100))
        ),
        build_record(batch_size=4, peak_hwm_bytes=1500 * MIB),
    )
    spreads = repeat_spreads(runs)
    assert len(spreads) == 1
    (spread,) = spreads
    assert spread.point == "16^3 batch 2"
    assert spread.runs == 3
    assert spread.mean_hwm_mib == pytest.approx(1050)
    assert spread.hwm_spread_pct == pytest.approx(100 / 1050 * 100)
    assert spread.sampled_spread_pct == pytest.approx(100 / 1040 * 100)
    assert largest_spread_pct(spreads) == pytest.approx(spread.hwm_spread_pct)


def test_runs_with_different_steps_or_knobs_are_not_repeats_of_each_other() -> None:
    runs = _runs(
        build_record(steps=3),
        build_record(steps=6),
        build_record(precision="mixed_float16"),
        build_record(base_filters=8),
    )
    assert repeat_spreads(runs) == []
    assert largest_spread_pct([]) is None


def test_a_point_label_names_a_cube_by_its_side_and_other_shapes_in_full() -> None:
    assert point_label({"depth": 32, "height": 32, "width": 32, "batch_size": 1}) == "32^3 batch 1"
    assert point_label({"depth": 240, "height": 240, "width": 144, "batch_size": 16}) == (
        "240x240x144 batch 16"
    )
    assert (
        point_label(
            {"workload": "alexnet", "height": 224, "width": 224, "depth": None, "batch_size": 8}
        )
        == "224^2 batch 8"
    )


def test_the_benchmark_prints_the_floor_modules_figures() -> None:
    runs = _runs(
        build_record(batch_size=2, peak_hwm_bytes=1000 * MIB, peak_sampled_bytes=990 * MIB),
        build_record(
            batch_size=2, repeat=1, peak_hwm_bytes=1100 * MIB, peak_sampled_bytes=1100 * MIB
        ),
    )
    gap_text = measurement_floor.sampling_gap(runs)
    assert "Over 2 `ok` runs" in gap_text
    assert "| largest | 10.0 | 1.00% |" in gap_text
    assert "The largest relative gap is at 16^3 batch 2." in gap_text
    noise_text = measurement_floor.repeat_noise(runs)
    assert "| 16^3 batch 2 | 2 | 1050 | 9.52% | 10.53% |" in noise_text
    assert "Largest high-water-mark spread: 9.52%." in noise_text
