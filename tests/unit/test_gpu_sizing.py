"""GPU sizing answers: largest cube, largest batch, which GPU sizes fit; what would make it fit.

Answered from the bundled H200 runs as one GPU profile (`application.gpu_models`), for
the H200 itself, for listed GPU sizes (their usable memory, `core.gpu_cards`) and for a
size given alone.
"""

from __future__ import annotations

import pandas as pd
import pytest

from application import gpu_models
from application.gpu_sizing import (
    HOST_RAM_NOTE,
    LARGEST_BATCH,
    LARGEST_CUBE,
    WHICH_GPUS,
    GpuQuestion,
    Verdict,
    answer,
)
from core import bundled_gpu, datafiles
from core.errors import ConfigError
from core.gpu_cards import GIB, card_for

H200_RUNS, ALLOC_CONF = bundled_gpu.BUNDLED_GPU_RUNS[0]


@pytest.fixture(scope="module")
def models() -> dict[str, gpu_models.GpuProfileModel]:
    runs = datafiles.read_gpu_runs(H200_RUNS, default_alloc_conf=ALLOC_CONF).to_pandas()
    return gpu_models.gpu_models_of(runs)


def test_the_largest_cube_on_the_measured_h200_is_answered_without_a_transfer(models) -> None:
    said = answer(GpuQuestion(LARGEST_CUBE, batch_size=2), models)

    assert said.card.size_gb == 141 and said.card.usable_bytes == 150_109_880_320
    assert said.found == 320 and said.check is not None and said.check.verdict is Verdict.FITS
    assert said.found_verify is not None and said.found_verify > said.found  # beyond: verify
    assert said.evidence.transfer is None and said.evidence.run_count == 50
    assert said.evidence.profile_label.startswith("NVIDIA H200 (139.80 GiB usable)")
    assert said.evidence.random_split_coverage == 1.0
    assert said.notes == (HOST_RAM_NOTE,) and said.options == ()


def test_an_80_gb_h100_is_answered_by_the_h200_with_its_usable_memory_and_the_rule(
    models,
) -> None:
    said = answer(GpuQuestion(LARGEST_CUBE, batch_size=2, gpu="80GB"), models)

    assert said.card.usable_bytes == round(79.18 * GIB)  # not 80 GB
    assert said.found == 288
    assert said.check is not None and said.check.bound_bytes <= said.card.usable_bytes
    transfer = said.evidence.transfer
    assert transfer is not None and transfer.bounded
    assert "same architecture (compute 9.0)" in transfer.words


def test_the_largest_batch_at_a_patch_rises_with_bfloat16(models) -> None:
    full = answer(GpuQuestion(LARGEST_BATCH, image_shape=(128, 128, 128), gpu="80GB"), models)
    half = answer(
        GpuQuestion(
            LARGEST_BATCH, image_shape=(128, 128, 128), gpu="80GB", precision="mixed_bfloat16"
        ),
        models,
    )

    assert full.found is not None and half.found is not None
    assert half.found > full.found
    assert full.check is not None and full.check.config.batch_size == full.found


def test_which_gpus_fit_a_patch_says_a_verdict_per_size_and_what_would_make_it_fit(
    models,
) -> None:
    said = answer(
        GpuQuestion(WHICH_GPUS, image_shape=(256, 256, 256), batch_size=2, gpu="48GB"), models
    )

    verdicts = {check.card.size_gb: check.verdict for check in said.table}
    assert verdicts == {
        24: Verdict.DOES_NOT_FIT,
        40: Verdict.VERIFY_FIRST,
        48: Verdict.VERIFY_FIRST,
        80: Verdict.FITS,
        94: Verdict.FITS,
        141: Verdict.FITS,
    }
    changes = {option.change: option.check for option in said.options}
    assert set(changes) >= {
        "precision mixed_bfloat16 (bfloat16 autocast)",
        "an 80 GB GPU (H100 80GB)",
    }
    assert changes["an 80 GB GPU (H100 80GB)"].verdict is Verdict.FITS
    assert any(change.startswith("batch ") or change.startswith("cube ") for change in changes)
    assert all(option.check.bound_bytes is not None for option in said.options)


def test_between_floor_and_bound_expandable_segments_is_offered_as_unmeasured(models) -> None:
    said = answer(
        GpuQuestion(WHICH_GPUS, image_shape=(256, 256, 256), batch_size=2, gpu="40GB"), models
    )

    assert said.check is not None and said.check.verdict is Verdict.VERIFY_FIRST
    [expandable] = [o for o in said.options if "expandable_segments:True" in o.change]
    assert "no run measured" in expandable.check.reason
    assert expandable.check.verdict is Verdict.VERIFY_FIRST


def test_asking_for_expandable_segments_keeps_the_default_allocators_bound_and_says_so(
    models,
) -> None:
    default = answer(GpuQuestion(LARGEST_CUBE, batch_size=2, gpu="80GB"), models)
    expandable = answer(
        GpuQuestion(LARGEST_CUBE, batch_size=2, gpu="80GB", alloc_conf="expandable_segments:True"),
        models,
    )

    assert expandable.found == default.found
    transfer = expandable.evidence.transfer
    assert transfer is not None and "was not measured" in transfer.words


def test_another_architecture_has_no_bound_so_nothing_is_said_to_fit(models) -> None:
    said = answer(GpuQuestion(LARGEST_CUBE, batch_size=1, gpu="24GB"), models)

    assert said.found is None and said.found_verify is not None
    transfer = said.evidence.transfer
    assert transfer is not None and not transfer.bounded
    assert "another architecture" in transfer.words and "no bound" in transfer.words


def test_a_size_given_alone_is_taken_as_usable_memory(models) -> None:
    said = answer(GpuQuestion(LARGEST_CUBE, batch_size=2, gpu="75GiB"), models)

    assert said.card.usable_bytes == 75 * GIB and said.found is not None
    assert said.evidence.transfer is not None
    assert "memory size given alone" in said.evidence.transfer.words


def test_beyond_the_measured_range_a_bound_under_the_gpu_is_verify_first(models) -> None:
    said = answer(
        GpuQuestion(WHICH_GPUS, workload="alexnet", image_shape=(224, 224), batch_size=2048),
        models,
    )

    assert said.check is not None and said.check.verdict is Verdict.VERIFY_FIRST
    assert "2.0x beyond the measured range" in said.check.reason
    # A smaller batch is offered where it fits: the largest measured one, inside the range.
    batch = next(o for o in said.options if o.change.startswith("batch "))
    assert (batch.change, batch.check.verdict) == ("batch 1024", Verdict.FITS)


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (GpuQuestion(LARGEST_CUBE), "largest-cube needs a batch size"),
        (GpuQuestion(LARGEST_BATCH), "largest-batch needs an image size"),
        (GpuQuestion("biggest", batch_size=1), "'biggest' is not a GPU question"),
        (
            GpuQuestion(LARGEST_CUBE, batch_size=1, alloc_conf="garbage_collection_threshold:0.6"),
            "allocator setting 'garbage_collection_threshold:0.6' is not one memplan answers",
        ),
        (GpuQuestion(LARGEST_CUBE, batch_size=1, gpu="75"), "'75' is not a GPU memory size"),
        (GpuQuestion(LARGEST_CUBE, batch_size=1, profile="nope"), "no GPU profile 'nope'"),
    ],
)
def test_a_question_that_cannot_be_answered_says_why_in_one_line(
    models, question: GpuQuestion, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        answer(question, models)


def test_without_gpu_runs_the_answer_says_where_to_get_them() -> None:
    with pytest.raises(ConfigError, match="no GPU profile in this database: import GPU runs"):
        answer(GpuQuestion(LARGEST_CUBE, batch_size=1, gpu="80GB"), {})
    assert gpu_models.gpu_models_of(pd.DataFrame({"memory_target": []})) == {}


def test_a_listed_size_is_its_usable_memory_with_its_source() -> None:
    card = card_for("94GB")

    assert card.cards == "H100 NVL" and card.usable_bytes == round(93.02 * GIB)
    assert "out-of-memory messages" in card.source


def test_a_line_of_two_runs_says_at_most_verify_first(models) -> None:
    said = answer(
        GpuQuestion(
            WHICH_GPUS,
            workload="alexnet",
            image_shape=(224, 224),
            batch_size=512,
            precision="mixed_bfloat16",
        ),
        models,
    )

    assert said.check is not None and said.check.verdict is Verdict.VERIFY_FIRST
    assert "rests on 2 runs" in said.check.reason
    # Its bound is under the H200 already: a smaller batch or cube, verify first for the
    # same 2 runs, would change nothing, so none is offered.
    assert not [o for o in said.options if o.change.startswith(("batch ", "cube "))]


def test_a_gpu_selector_offers_every_size_and_profile_as_a_question_takes_them(models) -> None:
    from application.gpu_sizing import gpu_choices

    choices = gpu_choices(models)

    assert [value for value, _ in choices.sizes] == [
        "24GB", "40GB", "48GB", "80GB", "94GB", "141GB",
    ]  # fmt: skip
    [(key, label)] = choices.profiles
    value, shown = choices.sizes[3]
    said = answer(GpuQuestion(LARGEST_CUBE, batch_size=2, gpu=value, profile=key), models)
    assert said.card.label == shown and said.evidence.profile_label == label
