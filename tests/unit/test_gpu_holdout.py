"""memplan's own H200 runs (data/gpu/memplan-h200-2026-11-28), measured by its GPU child on
a real H200: read back as an import reads them, compared with the outside script's runs,
and answered by the bundled GPU model (`benchmarks.gpu_holdout`) with no verdict that
the runs contradict."""

from __future__ import annotations

from pathlib import Path

from application import gpu_models
from benchmarks import gpu_holdout
from core import bundled_gpu, datafiles, record_files
from modeling import gpu_evaluation
from profiling import folder_compare

REPO = Path(__file__).resolve().parents[2]
CALLS = sorted((REPO / "data" / "gpu" / "memplan-h200-2026-11-28").glob("call-*/records"))
H200_LINES = REPO / "data" / "gpu" / "h200-torch-2026-11-28.jsonl"


def test_memplans_own_h200_runs_agree_with_the_outside_scripts_allocated_peaks() -> None:
    runs = [
        record_files.load(path)[0] for call in CALLS for path in record_files.record_paths(call)
    ]
    found = folder_compare.compare(runs, H200_LINES)
    assert len(runs) == 31 and len(found) == 24  # two repeats among them
    assert max(abs(each.percent("allocated_peak_bytes")) for each in found) < 0.25
    unet = [each for each in found if "unet3d" in each.line()]
    assert max(abs(each.percent("reserved_peak_bytes")) for each in unet) < 0.3


def test_the_bundled_answers_say_nothing_memplans_own_runs_contradict() -> None:
    path, alloc_conf = bundled_gpu.BUNDLED_GPU_RUNS[0]
    train = datafiles.read_gpu_runs(path, default_alloc_conf=alloc_conf).to_pandas()
    (model,) = gpu_models.gpu_models_of(train).values()
    test, repeats = gpu_holdout.first_of_each(gpu_holdout.held_out_runs(CALLS))
    lines, wrong = gpu_holdout.rows(model, test)
    assert len(test) == 29 and len(repeats) == 2
    assert wrong == {"on its GPU": 0, "at what it used": 0, "fits under what it used": 0}
    scores = gpu_evaluation.held_out(train, test)
    assert scores.floor_soundness == 1.0 and scores.unanswered == 2  # the two knob variants
