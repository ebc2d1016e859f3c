"""Issue 27, finding 2: a tampered stored tree is refused, never predicted with (SIGSEGV).

Before, a random forest whose tree child indexes 10^7, or an XGBoost booster
whose ``left_children`` holds 10^6, loaded and then killed the process on
predict with exit 139 (`modeling size`, `report`, the dashboard's server).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
from xgboost import XGBRegressor

from modeling.errors import ModelingError
from modeling.stored import codec, structure, tables

REPO_ROOT = Path(__file__).resolve().parents[2]
X = np.random.default_rng(0).random((40, 3))
Y = X.sum(axis=1) + 1


def _forest(kind=RandomForestRegressor) -> TransformedTargetRegressor:
    model = kind(n_estimators=3, random_state=0)
    return TransformedTargetRegressor(model, func=np.log, inverse_func=np.exp).fit(X, Y)


def _tampered_forest(change: Callable[[dict], None], kind=RandomForestRegressor) -> bytes:
    fitted = _forest(kind)
    tree = fitted.regressor_.estimators_[1].tree_
    state = tree.__getstate__()
    change(state)
    tree.__setstate__(state)
    return codec.encode(fitted)


def _tampered_booster(change: Callable[[dict], None]) -> bytes:
    model = XGBRegressor(n_estimators=3, max_depth=2, n_jobs=1)
    blob = codec.encode(
        TransformedTargetRegressor(model, func=np.log, inverse_func=np.exp).fit(X, Y)
    )
    source, out = zipfile.ZipFile(io.BytesIO(blob)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name in source.namelist():
            data = source.read(name)
            if name == codec.BOOSTER_MEMBER:
                booster = json.loads(data)
                change(booster["learner"]["gradient_booster"]["model"])
                data = json.dumps(booster).encode()
            archive.writestr(name, data)
    return out.getvalue()


def _set(field: str, node: int, value) -> Callable[[dict], None]:
    def change(state: dict) -> None:
        state["nodes"][field][node] = value

    return change


def _tree1(field: str, node: int, value) -> Callable[[dict], None]:
    def change(model: dict) -> None:
        model["trees"][1][field][node] = value

    return change


def test_untampered_models_still_load_and_predict() -> None:
    for blob in (codec.encode(_forest()), _tampered_booster(lambda model: None)):
        assert np.all(np.isfinite(codec.decode(blob).predict(X[:3])))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_set("left_child", 0, 10**7), "child 10000000 is not a node of this tree"),
        (_set("right_child", 0, -5), "child -5 is not a node"),
        (_set("left_child", 0, 0), "child 0 is not a node"),  # a cycle to the root
        (_set("feature", 0, 10**6), "splits on feature 1000000, not one of its 3"),
        (_set("feature", 0, -2), "splits on feature -2"),
        (_set("threshold", 0, float("nan")), "threshold is not a finite number"),
    ],
)
def test_a_tampered_forest_is_refused(change, reason: str) -> None:
    with pytest.raises(codec.UnreadableModel, match="scikit-learn trees are malformed") as refused:
        codec.decode(_tampered_forest(change))
    assert reason in str(refused.value)


def test_a_node_count_beyond_the_node_array_is_refused_before_the_array_is_read() -> None:
    fitted = _forest()
    tree = fitted.regressor_.estimators_[1].tree_
    state = tree.__getstate__()
    tree.__setstate__(state | {"node_count": 10**6})  # skops would set it so from its archive
    with pytest.raises(ValueError, match="node_count 1000000 does not match its"):
        structure.check_sklearn(fitted)


def test_a_tampered_extra_trees_model_is_refused() -> None:
    blob = _tampered_forest(_set("right_child", 0, 10**7), kind=ExtraTreesRegressor)
    with pytest.raises(codec.UnreadableModel, match="child 10000000"):
        codec.decode(blob)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_tree1("left_children", 0, 10**6), "child 1000000 is not a node of this tree"),
        (_tree1("right_children", 0, 0), "child 0 is not a node"),
        (_tree1("split_indices", 0, 10**6), "splits on feature 1000000, not one of its 3"),
        (_tree1("split_conditions", 0, "x"), "split condition 'x' is not finite"),
        (_tree1("parents", 1, 5), "node 1's parent is not node 0"),
        (lambda model: model["trees"][1]["left_children"].pop(), "left_children does not have"),
        (lambda model: model["gbtree_model_param"].update(num_trees="9"), "num_trees 9"),
        (lambda model: model["trees"][1]["tree_param"].update(num_nodes="99"), "does not have"),
        (lambda model: model.update(tree_info=[0, 5, 0]), "tree_info"),
        (lambda model: model["trees"].__setitem__(1, []), "layout is not XGBoost's"),
    ],
)
def test_a_tampered_booster_is_refused(change, reason: str) -> None:
    with pytest.raises(codec.UnreadableModel, match="XGBoost model is malformed") as refused:
        codec.decode(_tampered_booster(change))
    assert reason in str(refused.value)


def test_the_refusal_names_the_refit_command() -> None:
    row = {
        "name": "random_forest",
        "estimator": _tampered_forest(_set("left_child", 0, 10**7)),
        "versions_json": "{}",
    }
    refit = "memplan evaluate --db runs.duckdb"
    with pytest.raises(ModelingError, match=f"nothing of it was run: .*Re-run `{refit}`"):
        tables._estimator(row, "runs.duckdb", refit)


@pytest.mark.parametrize("kind", ["forest", "booster"])
def test_a_process_handed_a_tampered_model_exits_cleanly(tmp_path: Path, kind: str) -> None:
    """The headline: the process that reads the row survives (it was SIGSEGV, exit 139)."""
    blob = (
        _tampered_forest(_set("left_child", 0, 10**7))
        if kind == "forest"
        else _tampered_booster(_tree1("left_children", 0, 10**6))
    )
    (tmp_path / "model.bin").write_bytes(blob)
    script = textwrap.dedent(
        f"""
        import sys, numpy as np
        from modeling.stored import codec
        blob = open({str(tmp_path / "model.bin")!r}, "rb").read()
        try:
            codec.decode(blob).predict(np.random.default_rng(0).random((4, 3)))
        except codec.UnreadableModel as error:
            print(error); sys.exit(2)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "malformed" in done.stdout


def test_a_tampered_tree_read_lazily_is_refused_at_its_first_use_every_time() -> None:
    # The Models page reads a model back when it first draws it (`codec.Stored`).
    row = {
        "name": "random_forest",
        "estimator": _tampered_forest(_set("left_child", 0, 10**7)),
        "versions_json": "{}",
    }
    stored = tables._estimator(row, "runs.duckdb", "memplan evaluate", lazy=True)

    for _ in range(2):
        with pytest.raises(ModelingError, match="random_forest.*scikit-learn trees are malformed"):
            stored.predict(None)


def test_a_pickle_is_refused_before_any_use_even_lazily() -> None:
    row = {"name": "paper", "estimator": b"\x80\x04N.", "versions_json": "{}"}

    with pytest.raises(ModelingError, match="it is a pickle"):
        tables._estimator(row, "runs.duckdb", "memplan evaluate", lazy=True)


def test_a_decoded_forest_changed_in_memory_never_reaches_the_next_reader() -> None:
    # Decoding is remembered per blob; what one caller does to its estimator stays its own.
    blob = codec.encode(_forest())
    first = codec.decode(blob)
    tree = first.regressor_.estimators_[1].tree_
    state = tree.__getstate__()
    state["nodes"]["left_child"][0] = 10**7  # would read outside the arrays on predict
    tree.__setstate__(state)

    again = codec.decode(blob)

    assert again is not first
    assert again.regressor_.estimators_[1].tree_.children_left[0] != 10**7
    np.testing.assert_allclose(again.predict(X), _forest().predict(X))
