"""Fitted estimators stored as data, never as code: the ``models`` table's ``estimator`` BLOB.

A stored estimator is a small zip archive. ``model.json`` says what it is:
``{"format": "memplan-model", "version": 1, "type": TYPE, "state": {...}}``.

=============  ====================================================================
TYPE           what else the archive holds
=============  ====================================================================
paper          nothing: ``state`` is the estimator's ``to_state()`` (JSON)
refined        nothing (the framework baseline is in ``state``)
least_squares  nothing (intercept and coefficients)
symbolic       nothing (gplearn's program as tokens, `modeling.estimators.formula`)
hybrid         nothing (the refined part and the symbolic part)
xgboost        ``booster.json``: the trees in XGBoost's own JSON; ``wrapper.skops``:
               the log/exp target transform around them, in skops' format
sklearn        ``estimator.skops``: a scikit-learn baseline in skops' format
calibrated     ``prior.model``: the nearest profile's stored model (any type above, but
               not ``calibrated``), which ``state``'s offset and scale transfer
               (`modeling.estimators.calibrated`, what ``memplan calibrate`` stores)
=============  ====================================================================

Reading one builds the estimator from those values: JSON, XGBoost's JSON model
and skops archives, which hold arrays and a schema and are read with
`skops.io.loads`, trusting only `TRUSTED_TYPES` on top of skops' own safe
list. Nothing a stored row says is imported, called or evaluated. A pickle (what
memplan stored before) or anything else is refused with `UnreadableModel`, and so
is a tree whose node indices, features or counts are out of range
(`modeling.stored.structure`): scikit-learn and XGBoost trust those arrays, and a
tampered one would crash the process on predict.

`Stored` reads one back only when it is first asked to predict (`decode`, once):
its archive and manifest are checked when it is made, the rest on that first use.
A page that draws three models of ten then never reads the trees (scikit-learn,
skops and XGBoost: ~3.7 s CPU on the 2-core VM).
"""

from __future__ import annotations

import copy
import functools
import importlib
import io
import json
import math
import sys
import threading
import types
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sklearn.compose import TransformedTargetRegressor

# skops, XGBoost and each estimator's module are imported when a model of theirs is
# read or written, not with this module: ``memplan size`` decodes one model, and
# importing them all took ~1.5 s of its cold start on the 2-core VM (`python -X importtime`).

FORMAT = "memplan-model"
VERSION = 1
MANIFEST = "model.json"
SKOPS_MEMBER, WRAPPER_MEMBER, BOOSTER_MEMBER = "estimator.skops", "wrapper.skops", "booster.json"
PRIOR_MEMBER = "prior.model"
CALIBRATED = "calibrated"
# Types skops does not trust by default that the scikit-learn baselines hold: plain
# arrays and numbers inside (a tree's nodes, the MLP optimiser's moments).
TRUSTED_TYPES: tuple[str, ...] = (
    "sklearn.tree._tree.Tree",
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
)
# Far above any stored model (a 300-tree forest is under 1 MB): refuse a zip bomb.
MAX_MEMBER_BYTES = 256 * 2**20

# The estimators whose state is plain JSON: type name -> (module, class with to_state/from_state).
JSON_TYPES: dict[str, tuple[str, str]] = {
    "paper": ("modeling.estimators.analytical", "PaperModel"),
    "refined": ("modeling.estimators.analytical", "RefinedAnalyticalModel"),
    "least_squares": ("modeling.estimators.baselines", "AnalyticalLeastSquares"),
    "symbolic": ("modeling.estimators.symbolic", "SymbolicRegression"),
    "hybrid": ("modeling.estimators.hybrid", "HybridSymbolicRegression"),
}
PICKLE_PREFIX = b"\x80"


class UnreadableModel(ValueError):
    """A stored estimator that is not in this format, or not valid in it; nothing was run."""


def _archive(type_name: str, state: dict[str, Any], members: dict[str, bytes]) -> bytes:
    manifest = {"format": FORMAT, "version": VERSION, "type": type_name, "state": state}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(MANIFEST, json.dumps(manifest, sort_keys=True, allow_nan=False))
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def json_type(type_name: str) -> Any:
    """The class of a `JSON_TYPES` entry, imported now."""
    module, name = JSON_TYPES[type_name]
    return getattr(importlib.import_module(module), name)


# Importing skops lists scikit-learn's estimators (`sklearn.utils.all_estimators`), which
# imports every package of scikit-learn: its array-API adapter for torch imports torch
# wherever torch is installed (requirements-torch.txt, in the shared .venv once the tests
# ran): importing skops then cost 5.6 CPU s instead of 3.0 on the loaded 2-core VM, and
# torch's 0.25 GiB. A stand-in without a path, only while skops loads, keeps that walk out
# of the adapter, which holds no estimator (skops trusts the same 208 types either way).
_TORCH_ADAPTER = "sklearn.externals.array_api_compat.torch"


def _skops_io() -> types.ModuleType:
    """``skops.io``, imported without importing torch."""
    if "skops.io" in sys.modules or _TORCH_ADAPTER in sys.modules:
        import skops.io as sio

        return sio
    sys.modules[_TORCH_ADAPTER] = types.ModuleType(_TORCH_ADAPTER)
    try:
        import skops.io as sio
    finally:
        del sys.modules[_TORCH_ADAPTER]
    return sio


def _skops(estimator: Any) -> bytes:
    return _skops_io().dumps(estimator)


def encode(estimator: Any) -> bytes:
    """``estimator`` (fitted, of a type `memplan evaluate` makes) as stored bytes."""
    if isinstance(estimator, Stored):  # read back from storage: stored as it was
        return estimator.blob
    from modeling.estimators.calibrated import CalibratedTransfer

    if type(estimator) is CalibratedTransfer:
        prior = encode(estimator.prior)
        if _read_members(prior)[0].get("type") == CALIBRATED:
            raise TypeError("a calibrated model's prior must be a fitted model, not another one")
        return _archive(CALIBRATED, estimator.to_state(), {PRIOR_MEMBER: prior})
    from sklearn.compose import TransformedTargetRegressor
    from xgboost import XGBRegressor

    for type_name in JSON_TYPES:
        if type(estimator) is json_type(type_name):
            return _archive(type_name, estimator.to_state(), {})
    if type(estimator) is TransformedTargetRegressor:
        if isinstance(estimator.regressor_, XGBRegressor):
            booster = bytes(estimator.regressor_.get_booster().save_raw("json"))
            wrapper = copy.copy(estimator)
            wrapper.regressor = wrapper.regressor_ = None
            members = {BOOSTER_MEMBER: booster, WRAPPER_MEMBER: _skops(wrapper)}
            return _archive("xgboost", {}, members)
        return _archive("sklearn", {}, {SKOPS_MEMBER: _skops(estimator)})
    raise TypeError(f"cannot store a {type(estimator).__name__} as data; refit with the catalogue")


def _read_members(blob: bytes) -> tuple[dict[str, Any], dict[str, bytes]]:
    if blob.startswith(PICKLE_PREFIX):
        raise UnreadableModel(
            "it is a pickle, as an older memplan stored models; pickles are never loaded, "
            "since loading one can run any code"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            members = {}
            for info in archive.infolist():
                if info.file_size > MAX_MEMBER_BYTES:
                    raise UnreadableModel(f"its part {info.filename!r} is implausibly large")
                members[info.filename] = archive.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as error:
        if isinstance(error, UnreadableModel):
            raise
        raise UnreadableModel(f"it is not a stored memplan model ({error})") from None
    try:
        manifest = json.loads(members.pop(MANIFEST))
    except (KeyError, ValueError) as error:
        raise UnreadableModel(f"its {MANIFEST} is missing or not JSON ({error})") from None
    if not (
        isinstance(manifest, dict)
        and manifest.get("format") == FORMAT
        and isinstance(manifest.get("state"), dict)
    ):
        raise UnreadableModel(f"its {MANIFEST} is not a {FORMAT} manifest")
    if manifest.get("version") != VERSION:
        raise UnreadableModel(
            f"it is {FORMAT} version {manifest.get('version')!r}; this memplan reads {VERSION}"
        )
    return manifest, members


def _from_skops(data: bytes) -> Any:
    try:
        return _skops_io().loads(data, trusted=list(TRUSTED_TYPES))
    except Exception as error:  # a crafted archive can fail in many ways; none runs code
        raise UnreadableModel(
            f"its skops part is refused ({type(error).__name__}: {error})"
        ) from None


def _target_regressor(loaded: Any) -> TransformedTargetRegressor:
    from sklearn.compose import TransformedTargetRegressor

    from modeling.stored import structure

    if type(loaded) is not TransformedTargetRegressor:
        raise UnreadableModel(f"its skops part is a {type(loaded).__name__}, not a baseline model")
    try:  # a tampered tree would read outside its arrays on predict: SIGSEGV
        structure.check_sklearn(loaded)
    except ValueError as error:
        raise UnreadableModel(f"its scikit-learn trees are malformed ({error})") from None
    return loaded


def _xgboost(members: dict[str, bytes]) -> TransformedTargetRegressor:
    from sklearn.base import clone
    from xgboost import XGBRegressor

    from modeling.stored import structure

    wrapper = _target_regressor(_from_skops(members[WRAPPER_MEMBER]))
    try:  # XGBoost trusts its arrays: a child index out of range is a SIGSEGV on predict
        structure.check_booster_json(members[BOOSTER_MEMBER])
    except ValueError as error:
        raise UnreadableModel(f"its XGBoost model is malformed ({error})") from None
    regressor = XGBRegressor(n_jobs=1)
    try:
        regressor.load_model(bytearray(members[BOOSTER_MEMBER]))
    except Exception as error:  # XGBoost's JSON parser reports a bad model its own way
        raise UnreadableModel(f"its XGBoost model is refused ({error})") from None
    wrapper.regressor_ = regressor
    wrapper.regressor = clone(regressor)
    return wrapper


def import_readers() -> None:
    """Import now every library `decode` may need (a server warms up with this; see
    `dashboard.serve`): each estimator module, scikit-learn's baselines, XGBoost, skops."""
    from modeling.estimators import baselines

    for type_name in JSON_TYPES:
        json_type(type_name)
    baselines.make_regressor("mlp")  # imports the scikit-learn estimators skops rebuilds
    import xgboost  # noqa: F401

    _skops_io()


READERS: dict[str, Callable[[dict[str, bytes]], Any]] = {
    "xgboost": _xgboost,
    "sklearn": lambda members: _target_regressor(_from_skops(members[SKOPS_MEMBER])),
}


def _calibrated(state: dict[str, Any], members: dict[str, bytes]) -> Any:
    """A `CalibratedTransfer`: two finite numbers and a prior that is not itself calibrated."""
    from modeling.estimators.calibrated import CalibratedTransfer

    offset, scale = float(state["offset"]), float(state["scale"])
    if not (math.isfinite(offset) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"offset {offset!r} and scale {scale!r} must be finite, scale > 0")
    prior = members[PRIOR_MEMBER]
    if _read_members(prior)[0].get("type") == CALIBRATED:
        raise UnreadableModel("its prior is itself a calibrated model; one level only")
    return CalibratedTransfer(offset=offset, scale=scale, prior=decode(prior))


def decode(blob: bytes) -> Any:
    """The estimator ``blob`` (from `encode`) describes; `UnreadableModel` if it is not one.

    Kept per process by its bytes (`_decoded`): the dashboard's server reads the same
    stored models for each visitor and page, and reading the trees back through skops
    is most of a first render (~0.7 s of the Sizing page's on the 2-core VM). Each
    caller gets its own copy (~8 ms for a 300-tree forest, against ~130 ms to read it
    back): a shared estimator that one caller changed would reach every other without
    the checks reading it back makes (a tree pointed out of its arrays is a SIGSEGV on
    predict; one test does exactly that to a decoded forest). A blob that is refused is
    read again, and refused again, each time.
    """
    return copy.deepcopy(_decoded(bytes(blob)))


# Decoded estimators kept (`decode`): a database's latest evaluations, several profiles'.
MAX_DECODED = 64


@functools.lru_cache(maxsize=MAX_DECODED)
def _decoded(blob: bytes) -> Any:
    manifest, members = _read_members(blob)
    type_name = manifest.get("type")
    try:
        if type_name == CALIBRATED:
            return _calibrated(manifest["state"], members)
        if type_name in JSON_TYPES:
            return json_type(type_name).from_state(manifest["state"])
        if type_name in READERS:
            return READERS[type_name](members)
    except UnreadableModel:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UnreadableModel(
            f"its {type_name} state is malformed ({type(error).__name__}: {error})"
        ) from None
    raise UnreadableModel(f"its type {type_name!r} is not one this memplan stores")


class Stored:
    """A stored estimator (`encode`'s bytes), decoded when first used and kept.

    Made only from an archive of a type this memplan stores (`UnreadableModel`
    otherwise, as `decode` says). ``refused`` turns the `UnreadableModel` that the
    first use may meet (a malformed skops part or tree) into the error raised then.
    It predicts as the estimator does; any other attribute is the estimator's.
    """

    def __init__(self, blob: bytes, refused: Callable[[UnreadableModel], Exception]) -> None:
        self.blob = bytes(blob)
        type_name = _read_members(self.blob)[0].get("type")
        if type_name not in JSON_TYPES and type_name not in READERS and type_name != CALIBRATED:
            raise UnreadableModel(f"its type {type_name!r} is not one this memplan stores")
        self._refused = refused
        self._lock = threading.Lock()  # a server's sessions share the cached models
        self._estimator: Any = None

    def decoded(self) -> Any:
        """The estimator, decoded on the first call; the ``refused`` error if it cannot be."""
        with self._lock:
            if self._estimator is None:
                try:
                    self._estimator = decode(self.blob)
                except UnreadableModel as error:
                    raise self._refused(error) from None
            return self._estimator

    def predict(self, X: Any) -> Any:
        return self.decoded().predict(X)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not the estimator's: unset while being made or copied
            raise AttributeError(name)
        return getattr(self.decoded(), name)
