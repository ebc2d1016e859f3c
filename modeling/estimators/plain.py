"""scikit-learn's estimator protocol for memplan's own regressors, without importing scikit-learn.

The estimators memplan stores as JSON (the analytical models, least squares,
symbolic regression and the hybrid) only need scikit-learn's *protocol*:
parameters read from ``__init__`` (``get_params``/``set_params``, so
``sklearn.base.clone`` works), regressor tags, R² ``score``, and "not fitted"
checks. Inheriting ``sklearn.base.BaseEstimator`` for that imported scikit-learn
(and SciPy's statistics under it) whenever a stored model was read back:
~1.6 s of `memplan size`'s ~2.5 s cold start on the 2-core VM
(`python -X importtime -m memplan size buy ...`). `PlainRegressor` gives the same
protocol and imports scikit-learn only where scikit-learn itself is being used
(tags, scoring) or an error has to be raised as its ``NotFittedError``.
"""

from __future__ import annotations

import inspect
from typing import Any


class PlainRegressor:
    """A regressor by scikit-learn's conventions: keyword ``__init__``, fitted state ends ``_``."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        # As scikit-learn reads them: the keyword parameters of __init__, sorted.
        if cls.__init__ is object.__init__:
            return []
        parameters = inspect.signature(cls.__init__).parameters.values()
        return sorted(p.name for p in parameters if p.name != "self")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The estimator's settings by name (and nested ones as ``name__setting`` when deep)."""
        params: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", item) for key, item in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> PlainRegressor:
        """Change settings by name; an unknown name is refused, naming the valid ones."""
        valid = self._get_param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {valid!r}."
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        # The settings that differ from their defaults, as scikit-learn shows an estimator.
        signature = inspect.signature(type(self).__init__)
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params(deep=False).items()
            if signature.parameters[name].default != value
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_tags__(self) -> Any:
        # Only scikit-learn's own machinery asks, so scikit-learn is loaded by then.
        from sklearn.utils import RegressorTags, Tags, TargetTags

        return Tags(
            estimator_type="regressor",
            target_tags=TargetTags(required=True),
            regressor_tags=RegressorTags(),
        )

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R² of the predictions on ``X`` against ``y``, as scikit-learn's regressors score."""
        from sklearn.metrics import r2_score

        return float(r2_score(y, self.predict(X), sample_weight=sample_weight))  # type: ignore[attr-defined]

    def check_fitted(self) -> None:
        """Raise scikit-learn's ``NotFittedError`` unless ``fit`` (or ``from_state``) ran."""
        if not any(name.endswith("_") and not name.startswith("__") for name in vars(self)):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                f"appropriate arguments before using this estimator."
            )
