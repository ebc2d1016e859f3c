"""Choosing a calibration's points: the widest relative bound next, stop at 5% or 6 points."""

from __future__ import annotations

import numpy as np
import pytest

from core.workloads.unet3d import UNetConfig
from modeling import calibration_choice as choice
from modeling.estimators.baselines import AnalyticalLeastSquares
from modeling.estimators.calibrated import CalibratedTransfer
from modeling.features import config_frame
from modeling.stored import codec

GIB = 2**30


def test_one_point_fits_the_offset_alone():
    fit = choice.fit_transfer([1.0 * GIB], [1.3 * GIB])

    assert (fit.scale, fit.points) == (1.0, 1)
    assert fit.predict(2.0 * GIB) == pytest.approx(2.3 * GIB)


def test_two_points_or_more_fit_offset_and_scale():
    fit = choice.fit_transfer([1.0, 2.0, 4.0], [1.5, 2.5, 4.5])

    assert (fit.offset, fit.scale) == (pytest.approx(0.5), pytest.approx(1.0))


def test_with_no_point_every_candidate_is_as_wide_as_the_widening():
    widths = choice.relative_widths([1.0, 2.0, 8.0], [], [], widening=1.2)

    assert widths == pytest.approx([0.2, 0.2, 0.2])


def test_without_widening_evidence_the_distance_still_orders_the_candidates():
    widths = choice.relative_widths([1.0 * GIB, 2.0 * GIB, 8.0 * GIB], [1.0 * GIB], [GIB], 1.0)

    assert choice.choose_next(widths, [1, 1, 1], [True, False, False]) == 2


def test_with_one_point_the_candidate_furthest_from_it_relative_to_its_value_is_widest():
    candidates = [1.0 * GIB, 2.0 * GIB, 4.0 * GIB, 8.0 * GIB]
    widths = choice.relative_widths(candidates, [1.0 * GIB], [1.1 * GIB], widening=1.5)

    # (W - 1) * |prior - 1 GiB| / (prior + 0.1 GiB)
    assert widths == pytest.approx([0.0, 0.5 * 1 / 2.1, 0.5 * 3 / 4.1, 0.5 * 7 / 8.1])
    assert choice.choose_next(widths, [1, 1, 1, 1], [True, False, False, False]) == 3


def test_with_three_points_the_prediction_interval_decides():
    prior = [1.0 * GIB, 2.0 * GIB, 4.0 * GIB]
    peaks = [1.1 * GIB, 2.0 * GIB, 4.2 * GIB]
    candidates = np.array([0.5, 3.0, 16.0]) * GIB
    widths = choice.relative_widths(candidates, prior, peaks, widening=1.5)

    fit = choice.fit_transfer(prior, peaks)
    design = np.column_stack([np.ones(3), prior])
    inverse = np.linalg.inv(design.T @ design)
    s = np.sqrt(np.sum((np.array(peaks) - fit.predict(prior)) ** 2) / 1)
    t = 6.313751514675041  # t(0.95, 1 degree of freedom)
    for candidate, width in zip(candidates, widths, strict=True):
        row = np.array([1.0, candidate])
        expected = t * s * np.sqrt(1 + row @ inverse @ row) / fit.predict(candidate)
        assert width == pytest.approx(expected)
    assert choice.choose_next(widths, [1, 1, 1], [False] * 3) == int(np.argmax(widths))


def test_a_tie_goes_to_the_cheapest_and_measured_points_are_never_chosen_again():
    assert choice.choose_next([0.3, 0.3, 0.3], [50.0, 10.0, 20.0], [False] * 3) == 1
    assert choice.choose_next([0.9, 0.3], [1.0, 1.0], [True, False]) == 1
    assert choice.choose_next([0.9], [1.0], [True]) is None


def test_it_stops_when_the_held_out_error_is_within_5_percent_with_3_points():
    prior = [1.0, 2.0, 4.0]
    exact = [1.2, 2.3, 4.5]  # 0.1 + 1.1 x prior: each point predicted exactly from the others

    assert choice.stop_reason(prior[:2], exact[:2]) is None  # two points: no held-out error
    assert choice.stop_reason(prior, exact).startswith("leave-one-out MAPE 0.00% <= 5%")


def test_it_goes_on_while_the_held_out_error_is_above_5_percent_and_stops_at_6_points():
    prior = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    peaks = [1.0, 3.0, 2.5, 5.5, 4.0, 7.5]

    for n in range(3, 6):
        assert choice.loo_mape_pct(prior[:n], peaks[:n]) > 5
        assert choice.stop_reason(prior[:n], peaks[:n]) is None
    assert choice.stop_reason(prior, peaks).startswith("6 points measured")


def test_the_calibrated_model_is_stored_as_data_and_reads_back():
    configs = [UNetConfig((side,) * 3, batch) for side in (32, 64) for batch in (1, 2)]
    frame = config_frame(configs)
    targets = [1.0 * GIB, 1.2 * GIB, 1.5 * GIB, 2.1 * GIB]
    prior = AnalyticalLeastSquares().fit(frame, targets)
    model = CalibratedTransfer(offset=0.5 * GIB, scale=1.1, prior=prior)

    back = codec.decode(codec.encode(model))

    assert back.predict(frame) == pytest.approx(model.predict(frame))
    assert model.predict(frame) == pytest.approx(0.5 * GIB + 1.1 * prior.predict(frame))
    with pytest.raises(TypeError, match="not another one"):
        codec.encode(CalibratedTransfer(offset=0.0, scale=1.0, prior=back))


def test_a_tampered_calibrated_model_is_refused_and_nothing_is_run():
    configs = [UNetConfig((side,) * 3, batch) for side in (32, 64) for batch in (1, 2)]
    prior = AnalyticalLeastSquares().fit(config_frame(configs), [1.0, 1.2, 1.5, 2.1])
    good = codec.encode(CalibratedTransfer(offset=0.0, scale=1.0, prior=prior))
    manifest, members = codec._read_members(good)
    bad_scale = codec._archive("calibrated", {"offset": 0.0, "scale": -1.0}, members)
    nested = codec._archive("calibrated", manifest["state"], {codec.PRIOR_MEMBER: good})

    with pytest.raises(codec.UnreadableModel, match="scale"):
        codec.decode(bad_scale)
    with pytest.raises(codec.UnreadableModel, match="one level only"):
        codec.decode(nested)
