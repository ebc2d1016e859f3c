"""Sizing answers on a constructed model whose bound is known exactly, boundaries included."""

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from application import widening
from core import profiles
from core.analytical import refined_breakdown
from core.errors import ConfigError
from core.workloads.unet3d import UNetConfig
from modeling.decision import Confidence, Evidence, decide, estimates_at
from modeling.errors import ModelingError
from modeling.evaluation.bounds import ConformalBound
from modeling.sizing import largest_batch, largest_image_side, memory_to_buy
from modeling.stored.predictor import Predictor, TrainingRange
from modeling.transfer import Nearest, Transfer, Widening
from presentation import sizing_text
from tests.conftest import UNMEASURED_MACHINE, build_record

GIB = 2**30
INSIDE_RATIO = 1.25  # the bound inside the measured range
BEYOND_RATIO = 1.5  # the (larger) bound from the extrapolation split
COLUMNS = ("depth", "height", "width", "batch_size")


class LinearPeak(RegressorMixin, BaseEstimator):
    """peak = base_bytes + bytes_per_voxel_sample x voxels x batch; exact in float64."""

    def __init__(self, *, base_bytes: int = GIB, bytes_per_voxel_sample: int = 1000) -> None:
        self.base_bytes = base_bytes
        self.bytes_per_voxel_sample = bytes_per_voxel_sample

    def fit(self, X: pd.DataFrame, y: Any = None) -> "LinearPeak":
        self.fitted_ = True
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        voxels_batch = X["depth"] * X["height"] * X["width"] * X["batch_size"]
        return (self.base_bytes + self.bytes_per_voxel_sample * voxels_batch).to_numpy(float)


class Dip(LinearPeak):
    """Like LinearPeak, but 80^3 needs a terabyte: a model that is not monotone."""

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.where(X["depth"] == 80, 2.0**40, super().predict(X))


MEASURED = TrainingRange(
    min_side=32.0,
    max_side=96.0,
    max_batch=16,
    max_sample_megavoxels=96**3 * 16 / 1e6,
    max_peak_bytes=20 * GIB,
    knobs={
        "base_filters": (16,),
        "levels": (5,),
        "in_channels": (1,),
        "classes": (1,),
        "precision": ("float32",),
        "upsampling": ("transpose",),
    },
)


def _model(estimator: Any = None, inside: float = INSIDE_RATIO) -> Predictor:
    return Predictor(
        name="exact",
        title="exact",
        kind="test",
        estimator=(estimator or LinearPeak()).fit(None),
        columns=COLUMNS,
        bound=ConformalBound(0.9, inside, 100, "constructed"),
        extrapolation_bound=ConformalBound(0.9, BEYOND_RATIO, 20, "constructed"),
        training_range=MEASURED,
    )


def _bound(side: int, batch: int, ratio: float = INSIDE_RATIO) -> int:
    exact = ratio * (GIB + 1000 * side**3 * batch)
    assert exact == int(exact)
    return int(exact)


def test_the_largest_side_fits_with_a_budget_exactly_equal_to_its_bound() -> None:
    answer = largest_image_side(_model(), _bound(64, 2), batch_size=2)

    assert (answer.side, answer.bound_bytes) == (64, _bound(64, 2))
    assert (answer.next_side, answer.next_bound_bytes) == (80, _bound(80, 2))
    assert answer.predicted_bytes == GIB + 1000 * 64**3 * 2


def test_one_byte_under_the_bound_drops_to_the_next_valid_side_down() -> None:
    answer = largest_image_side(_model(), _bound(64, 2) - 1, batch_size=2)

    assert (answer.side, answer.next_side) == (48, 64)


def test_sides_respect_the_networks_multiple() -> None:
    # A 4-level network takes multiples of 8: 56 fits between 48 and 64. No 4-level
    # network was measured, so the extrapolation bound applies to every side.
    budget = _bound(56, 1, BEYOND_RATIO)
    answer = largest_image_side(_model(), budget, batch_size=1, knobs={"levels": 4})

    assert (answer.side, answer.next_side) == (56, 64)


def test_the_answer_stops_at_the_first_size_that_does_not_fit() -> None:
    # 96^3 would fit this budget, but 80^3 does not: never skip over a size that fails.
    answer = largest_image_side(_model(Dip()), _bound(96, 1), batch_size=1)

    assert (answer.side, answer.next_side) == (64, 80)


def test_a_budget_every_side_fits_has_no_next_size() -> None:
    answer = largest_image_side(_model(), 2**60, batch_size=1)

    assert (answer.side, answer.next_side, answer.next_bound_bytes) == (4096, None, None)


def test_a_budget_below_the_smallest_image_is_a_clear_error() -> None:
    # 16^3 is smaller than any measured image: the extrapolation bound, 1.5 x 1.004 GiB.
    expected = (
        "smallest valid image \\(16\\^3\\) needs up to 1.51 GiB at batch 1, more than the 1.00"
    )
    with pytest.raises(ModelingError, match=expected):
        largest_image_side(_model(), GIB, batch_size=1)


def test_the_largest_batch_fits_with_a_budget_exactly_equal_to_its_bound() -> None:
    answer = largest_batch(_model(), _bound(64, 5), image_shape=(64, 64, 64))

    assert (answer.batch_size, answer.next_batch) == (5, 6)
    assert answer.bound_bytes == _bound(64, 5)
    assert largest_batch(_model(), _bound(64, 5) - 1, (64, 64, 64)).batch_size == 4


def test_beyond_the_measured_batches_the_larger_extrapolation_bound_applies() -> None:
    answer = largest_batch(_model(), _bound(64, 17, BEYOND_RATIO), (64, 64, 64))

    assert answer.batch_size == 17
    assert answer.basis.extrapolates
    assert "batch 17 is larger than the largest measured (16)" in answer.basis.warning
    assert "x1.500" in answer.basis.bound


def test_an_answer_inside_the_measured_range_says_so_and_warns_of_nothing() -> None:
    answer = largest_batch(_model(), _bound(64, 5), (64, 64, 64))

    assert not answer.basis.extrapolates
    assert answer.basis.warning == ""
    assert (answer.basis.model, answer.basis.coverage) == ("exact", 0.9)


def test_memory_to_buy_takes_a_listed_size_that_exactly_holds_the_requirement() -> None:
    # Point prediction exactly 64 GiB for 64^3 at batch 1, bound ratio 1.
    estimator = LinearPeak(base_bytes=64 * GIB - 1000 * 64**3)

    exact = memory_to_buy(_model(estimator, inside=1.0), (64, 64, 64), 1, headroom=0.0)
    one_byte_more = memory_to_buy(
        _model(LinearPeak(base_bytes=64 * GIB - 1000 * 64**3 + 1), inside=1.0),
        (64, 64, 64),
        1,
        headroom=0.0,
    )

    assert (exact.memory_gb, exact.required_bytes) == (64, 64 * GIB)
    assert one_byte_more.memory_gb == 96


def test_headroom_multiplies_the_bound_before_rounding_up() -> None:
    estimator = LinearPeak(base_bytes=64 * GIB - 1000 * 64**3)

    answer = memory_to_buy(_model(estimator, inside=1.0), (64, 64, 64), 1, headroom=0.5)

    assert (answer.bound_bytes, answer.required_bytes, answer.memory_gb) == (64 * GIB, 96 * GIB, 96)


def test_memory_to_buy_beyond_the_measured_range_warns_in_plain_words() -> None:
    answer = memory_to_buy(_model(), (240, 240, 144), 16)

    assert answer.basis.extrapolates
    assert "larger than the largest measured (~96^3)" in answer.basis.warning
    assert answer.bound_bytes == _bound(1, 0, BEYOND_RATIO) + int(1.5 * 1000 * 240 * 240 * 144 * 16)


def test_more_than_the_largest_purchasable_memory_is_a_clear_error() -> None:
    with pytest.raises(ModelingError, match="more than the largest purchasable size \\(3072 GB\\)"):
        memory_to_buy(_model(), (1024, 1024, 1024), 64)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda m: largest_image_side(m, -5, 1),
            ModelingError,
            "memory budget must be positive, got -5 bytes",
        ),
        (
            lambda m: largest_image_side(m, 1.5e9, 1),
            ModelingError,
            "memory budget must be a whole number of bytes, got 1500000000.0",
        ),
        (
            lambda m: largest_image_side(m, GIB, 0),
            ConfigError,
            "batch size must be between 1 and 4096, got 0",
        ),
        (
            lambda m: largest_batch(m, 8 * GIB, (200, 200, 200)),
            ConfigError,
            "Nearest valid sizes: 192 or 208",
        ),
        (
            lambda m: memory_to_buy(m, (64, 64, 64), 1, headroom=-0.1),
            ModelingError,
            "headroom must be a fraction between 0 and 10 .*got -0.1",
        ),
        (
            lambda m: memory_to_buy(m, (64, 64, 64), 1, knobs={"filters": 8}),
            ModelingError,
            "unknown network setting\\(s\\) filters; known: base_filters, levels",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call(_model())


def test_a_bound_below_the_closed_form_estimate_is_replaced_by_it_times_the_runs_excess() -> None:
    # 100 bytes per voxel and sample: a tenth of what the network really holds.
    too_low = LinearPeak(bytes_per_voxel_sample=100)
    config = UNetConfig((240, 240, 144), batch_size=16)
    # Its 36 runs peaked up to 1.33x the closed form (as the AVX2 EPYC's did with oneDNN).
    model = dataclasses.replace(
        _model(too_low),
        training_range=dataclasses.replace(MEASURED, closed_form_excess=1.33, excess_runs=36),
    )

    answer = memory_to_buy(model, config.image_shape, config.batch_size)

    floor = refined_breakdown(config, int(MEASURED.framework_bytes)).total_bytes
    assert answer.bound_bytes == int(floor * 1.33)
    assert answer.basis.raised_to_closed_form
    assert "the estimate times 1.33, the most any run of the 36 it was fitted on exceeded it" in (
        answer.basis.warning
    )
    assert answer.basis.bound.endswith("; replaced by the closed form x1.33")


def _fitted_on_runs_below_the_closed_form(estimator: Any) -> Predictor:
    # Runs from 0.85x to 1.49x the closed form, as the bundled PyTorch U-Net's.
    runs_range = dataclasses.replace(
        MEASURED, closed_form_excess=1.49, excess_runs=40, closed_form_least=0.85
    )
    return dataclasses.replace(_model(estimator), training_range=runs_range)


def test_a_bound_its_runs_undercut_the_closed_form_by_is_left_alone() -> None:
    config = UNetConfig((96, 96, 96), batch_size=4)
    estimate = refined_breakdown(config, int(MEASURED.framework_bytes)).total_bytes
    # A bound 10% under the closed form: above the least its runs reached, 0.85x it.
    below_estimate = LinearPeak(
        base_bytes=int(0.9 * estimate / INSIDE_RATIO), bytes_per_voxel_sample=0
    )
    model = _fitted_on_runs_below_the_closed_form(below_estimate)

    answer = memory_to_buy(model, config.image_shape, config.batch_size, headroom=0)

    assert not answer.basis.raised_to_closed_form
    assert answer.bound_bytes == pytest.approx(0.9 * estimate, rel=1e-6)


def test_a_bound_under_the_least_its_runs_reached_is_raised() -> None:
    config = UNetConfig((96, 96, 96), batch_size=4)
    estimate = refined_breakdown(config, int(MEASURED.framework_bytes)).total_bytes
    model = _fitted_on_runs_below_the_closed_form(LinearPeak(bytes_per_voxel_sample=100))

    answer = memory_to_buy(model, config.image_shape, config.batch_size, headroom=0)

    assert answer.basis.raised_to_closed_form
    assert answer.bound_bytes == int(estimate * 1.49)
    assert "the refined closed-form estimate x0.85, the least any run it was fitted on" in (
        answer.basis.warning
    )


def test_without_a_known_excess_the_replacement_is_the_closed_form_itself() -> None:
    """A model stored before the excess was kept, with no runs to read it from."""
    config = UNetConfig((240, 240, 144), batch_size=16)
    too_low = _model(LinearPeak(bytes_per_voxel_sample=100))
    answer = memory_to_buy(too_low, config.image_shape, config.batch_size)
    assert (
        answer.bound_bytes == refined_breakdown(config, int(MEASURED.framework_bytes)).total_bytes
    )


def test_a_plausible_bound_is_left_alone() -> None:
    answer = memory_to_buy(_model(), (64, 64, 64), 2)

    assert answer.bound_bytes == _bound(64, 2)
    assert not answer.basis.raised_to_closed_form


def test_a_model_that_cannot_bound_says_so_instead_of_answering_inf() -> None:
    negative = LinearPeak(base_bytes=-(2**50))

    with pytest.raises(ModelingError, match="model exact gives no finite upper bound for 16"):
        largest_image_side(_model(negative), 8 * GIB, batch_size=1)


class NegativeFrom(LinearPeak):
    """Like LinearPeak, but from 80^3 on it predicts a negative peak: no finite bound there."""

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.where(X["depth"] >= 80, -float(GIB), super().predict(X))


def test_a_next_size_without_a_finite_bound_is_said_to_have_none() -> None:
    answer = largest_image_side(_model(NegativeFrom()), 100 * GIB, batch_size=1)

    assert (answer.side, answer.next_side, answer.next_bound_bytes) == (64, 80, np.inf)


class CountingPeak(LinearPeak):
    """LinearPeak that counts its predict calls."""

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.calls_ = getattr(self, "calls_", 0) + 1
        return super().predict(X)


def test_remembered_predictions_answer_without_predicting_again() -> None:
    model = _model(CountingPeak())
    line = [UNetConfig((64, 64, 64), batch) for batch in range(1, 9)]
    model.remember(line)  # what the Sizing page does for the configurations a slider reaches
    model.remember(line[:3])  # known already: nothing predicted
    assert model.estimator.calls_ == 1 and model.knows(line[4])
    asked = model.point_bytes([line[4], line[2]])
    assert asked.tolist() == [GIB + 1000 * 64**3 * 5, GIB + 1000 * 64**3 * 3]
    assert model.estimator.calls_ == 1
    assert model.point_bytes([UNetConfig((32, 32, 32), 1)]).tolist() == [GIB + 1000 * 32**3]
    assert model.estimator.calls_ == 2  # a configuration never remembered is predicted


def _from_another_machine(model: Predictor, factor: float) -> tuple[Predictor, str]:
    """``model``, its runs measured on build_record's machine, answering for
    `UNMEASURED_MACHINE` with every bound widened by ``factor``; and its profile's key."""
    measured_on = profiles.profile_of(build_record().row())
    nearest = Nearest(measured_on.key, measured_on, (0, 2), ("oneDNN on in both", "AMX, not"))
    spread = Widening(factor, (factor,), (("a", "b"),), matched=True)
    moved = Transfer(UNMEASURED_MACHINE, nearest, spread, "the bundled reference")
    [widened] = widening.with_transfer([model], moved)
    return widened, measured_on.key


def test_an_answer_from_another_machines_runs_is_beyond_this_machines_measured_range() -> None:
    # 64^3 at batch 2 is inside the runs' range, and a run of exactly it measured 1 GiB:
    # on their own machine, a verified fit. For another machine the widened bound decides.
    model, key = _from_another_machine(_model(), factor=1.25)
    config = UNetConfig((64, 64, 64), 2)
    measured = Evidence(GIB, ("r1",), 20 * GIB)

    answer = memory_to_buy(model, config.image_shape, config.batch_size)
    decision = decide(estimates_at([model], config), "exact", config, measured, 64 * GIB, 0.2)

    assert answer.bound_bytes == _bound(64, 2) * 1.25  # the own inside bound, widened
    assert answer.basis.extrapolates
    assert f"the runs are another machine's: profile {key} (" in answer.basis.warning
    assert f"not this machine's ({UNMEASURED_MACHINE.label}, profile " in answer.basis.warning
    assert decision.confidence is Confidence.BEYOND and decision.fits
    assert sizing_text.headline(decision) == (
        "Predicted to fit, beyond this machine's measured range (another machine's runs "
        "answer): verify first"
    )
    assert f"Beyond the measured runs: the runs are another machine's: profile {key}" in (
        sizing_text.decision_sentence(decision, "64^3", "for Test CPU")
    )
