"""Frameworks compared (issue 29 point 5): the configurations measured in TensorFlow and in
PyTorch on one machine paired, their ratio, seed 004's figure's rows, and
``memplan machines --frameworks`` on a real database."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from core import profiles, store
from core.profile_frameworks import machine_of
from memplan import cli
from presentation import frameworks_compared
from tests.conftest import build_record

GIB = 2**30
TORCH_RUN = {
    "framework": "torch",
    "framework_version": "2.13.0+cpu",
    "torch_intra_op_threads": 4,  # torch's own default (physical cores), not TensorFlow's 8
    "intra_op_threads": None,
}
AMD = {"cpu_vendor": "AMD", "cpu_model": "AMD EPYC", "cpu_isa": "avx2", "onednn_enabled": False}
ALEXNET = {"workload": "alexnet", "depth": None, "base_filters": None, "levels": None}
ALEXNET |= {"upsampling": None, "in_channels": 3, "classes": 1000, "height": 224, "width": 224}


def _run(batch: int, peak_gib: float, **facts):
    peak = int(peak_gib * GIB)
    values = ALEXNET | {"batch_size": batch, "peak_hwm_bytes": peak, "peak_sampled_bytes": peak}
    return build_record(**(values | facts))


def _records() -> list:
    """AlexNet 224 at batches 1, 2, 4 in TensorFlow (three repeats at 4) and in torch on
    build_record's machine; batch 8 in TensorFlow only; a torch run of another step count;
    torch on an AMD; a torch run out of memory."""
    return [
        _run(1, 1.0),
        _run(2, 1.5),
        _run(4, 2.0, repeat=0),
        _run(4, 2.4, repeat=1),
        _run(4, 2.2, repeat=2),
        _run(8, 4.0),
        _run(1, 2.0, **TORCH_RUN),
        _run(2, 3.0, **TORCH_RUN),
        _run(4, 3.3, **TORCH_RUN),
        _run(2, 3.0, steps=6, **TORCH_RUN),
        _run(1, 9.0, **TORCH_RUN, **AMD),
        _run(2, 9.0, status="oom", peak_hwm_bytes=None, peak_sampled_bytes=None, **TORCH_RUN),
    ]


@pytest.fixture
def runs() -> pd.DataFrame:
    return pd.DataFrame([record.row() for record in _records()])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memplan.duckdb"
    store.insert_runs(path, _records())
    return path


def test_a_tensorflow_and_a_torch_profile_of_one_machine_are_one_machine(runs):
    found = list(profiles.profiles_in(runs).values())
    tensorflow = next(p for p in found if p.framework == "tensorflow")
    torch = next(p for p in found if p.framework == "torch" and p.cpu_vendor == "Intel")
    amd = next(p for p in found if p.cpu_vendor == "AMD")
    assert tensorflow != torch and machine_of(tensorflow) == machine_of(torch)
    assert machine_of(amd) != machine_of(torch)
    assert torch.machine_label == "Intel Test, AVX-512, 8 cores"
    assert torch.label == "Intel Test, AVX-512, 8 cores, PyTorch 2.13"


def test_each_configuration_in_both_frameworks_on_one_machine_is_paired_with_its_ratio(runs):
    frame = frameworks_compared.compared(runs)

    assert list(frame.columns) == frameworks_compared.PAIR_COLUMNS
    # Batch 8 (TensorFlow only), the 6-step torch run, the AMD and the oom run pair with nothing.
    assert list(frame["batch_size"]) == [1, 2, 4]
    assert list(frame["tensorflow_peak_gib"]) == pytest.approx([1.0, 1.5, 2.2])  # the median
    assert list(frame["torch_peak_gib"]) == pytest.approx([2.0, 3.0, 3.3])
    assert list(frame["ratio"]) == pytest.approx([2.0, 2.0, 1.5])
    assert list(frame["tensorflow_runs"]) == [1, 1, 3] and set(frame["torch_runs"]) == {1}
    [row] = frame[frame["batch_size"] == 1].to_dict("records")
    assert (row["machine"], row["tensorflow"], row["torch"]) == (
        "Intel Test, AVX-512, 8 cores",
        "TensorFlow 2.16",
        "PyTorch 2.13",
    )
    assert row["configuration"] == "224 batch 1, 1000 classes, float32, 3 steps"
    assert frameworks_compared.pairs_of(frame) == [
        "Intel Test, AVX-512, 8 cores: TensorFlow 2.16 and PyTorch 2.13"
    ]


def test_one_framework_or_no_runs_pair_nothing(runs):
    tensorflow_only = runs[runs["framework"] == "tensorflow"]
    assert frameworks_compared.compared(tensorflow_only).empty
    assert frameworks_compared.compared(runs.iloc[0:0]).empty
    assert list(frameworks_compared.compared(runs.iloc[0:0]).columns) == (
        frameworks_compared.PAIR_COLUMNS
    )


def test_the_table_shows_both_peaks_and_the_ratio_and_the_machine_only_where_several(runs):
    table = frameworks_compared.table(frameworks_compared.compared(runs))
    assert list(table.columns) == [
        "configuration",
        "TensorFlow peak (GiB)",
        "PyTorch peak (GiB)",
        "PyTorch / TensorFlow",
    ]
    # The AMD's TensorFlow runs make a second machine: its column says which is which.
    amd_tensorflow = pd.DataFrame([_run(1, 3.0, **AMD).row()])
    two = frameworks_compared.compared(pd.concat([runs, amd_tensorflow], ignore_index=True))
    table = frameworks_compared.table(two)
    assert "machine" in table.columns and len(table) == 4
    assert "AMD EPYC, AVX2, 8 cores: TensorFlow 2.16, oneDNN off and PyTorch 2.13" in set(
        table["machine"]
    )


def test_alexnets_pairs_give_seed_004s_figure_per_framework_along_the_batch(runs):
    points = frameworks_compared.by_batch(frameworks_compared.compared(runs))
    assert len(points) == 6
    torch = points[points["framework"] == "PyTorch 2.13"]
    assert list(torch["batch_size"]) == [1, 2, 4]
    assert list(torch["peak_gib"]) == pytest.approx([2.0, 3.0, 3.3])
    assert frameworks_compared.figure_images(points) == ["224"]
    summary = frameworks_compared.summaries(frameworks_compared.compared(runs))
    assert summary == [
        "Intel Test, AVX-512, 8 cores: TensorFlow 2.16 and PyTorch 2.13: 3 configuration(s), "
        "PyTorch / TensorFlow median 2.000, min 1.500, max 2.000"
    ]


def test_machines_frameworks_prints_the_pairs_and_their_ratios(db, capsys):
    assert cli.main(["machines", "--frameworks", "--markdown", "--db", str(db)]) == 0

    out = capsys.readouterr().out
    assert (
        "| configuration | TensorFlow peak (GiB) | PyTorch peak (GiB) | PyTorch / TensorFlow |"
        in (out)
    )
    assert "| 224 batch 4, 1000 classes, float32, 3 steps | 2.200 | 3.300 | 1.500 |" in out
    assert "3 configuration(s), PyTorch / TensorFlow median 2.000, min 1.500, max 2.000" in out


def test_machines_frameworks_json_has_peaks_in_bytes(db, capsys):
    assert cli.main(["machines", "--frameworks", "--json", "--db", str(db)]) == 0

    rows = json.loads(capsys.readouterr().out)
    assert [row["batch_size"] for row in rows] == [1, 2, 4]
    assert rows[0]["tensorflow_peak_bytes"] == GIB and rows[0]["torch_peak_bytes"] == 2 * GIB
    assert rows[0]["ratio"] == pytest.approx(2.0)
    assert "tensorflow_peak_gib" not in rows[0]


def test_machines_frameworks_says_what_to_run_when_nothing_pairs(tmp_path, capsys):
    path = tmp_path / "one.duckdb"
    store.insert_run(path, _run(1, 1.0))

    assert cli.main(["machines", "--frameworks", "--db", str(path)]) == 0

    out = capsys.readouterr().out
    assert out.startswith("no configuration was measured in both TensorFlow and PyTorch")
    assert "--framework torch" in out


def test_compare_and_frameworks_are_one_or_the_other(db, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["machines", "--compare", "--frameworks", "--db", str(db)])
    assert exited.value.code == 2
