"""One-off: convert the pickled models of a results export to memplan's data format.

Until the stored models became data (`modeling.stored.codec`), ``models.parquet``
of ``python -m modeling export-results`` held pickles, and so did the bundled
results (data/reference_results/, data/alexnet_results/). This script converted
those once; it is kept to show how, and for an export of one's own:

    .venv/bin/python -m scripts.convert_bundled_models [DIR ...]

(default: both bundled folders). Only run it on exports you trust: it is the
one place left that unpickles, and unpickling runs whatever the pickle says.
Each row's estimator is unpickled, brought to the current attributes (a
symbolic model keeps its gplearn program as tokens, not as the gplearn
regressor), re-stored with `modeling.stored.codec.encode`, and checked to
predict the same as the pickle on the rows' training range; every other column
and the file's metadata stay as they were. Rows already converted are left alone.
"""

from __future__ import annotations

import argparse
import io
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core import workloads
from modeling.estimators.formula import program_tokens
from modeling.estimators.hybrid import HybridSymbolicRegression
from modeling.estimators.symbolic import SymbolicRegression
from modeling.features import config_frame
from modeling.stored import bundle, codec, tables

# Where the estimator classes pickled before the 2ed9e62 reorganisation live now.
MOVED_MODULES = {
    "modeling.analytical_models": "modeling.estimators.analytical",
    "modeling.baselines": "modeling.estimators.baselines",
    "modeling.hybrid": "modeling.estimators.hybrid",
    "modeling.symbolic": "modeling.estimators.symbolic",
    "modeling.models": "modeling.estimators.catalogue",
    "modeling.analytical": "core.analytical",
}


class _TrustedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED_MODULES.get(module, module), name)


def _tokens_kept(model: SymbolicRegression) -> SymbolicRegression:
    """A symbolic model pickled with its gplearn regressor, keeping only the program's tokens."""
    if not hasattr(model, "program_tokens_"):
        model.program_tokens_ = program_tokens(model.regressor_._program.program)
    model.__dict__.pop("regressor_", None)
    return model


def _current(estimator: Any) -> Any:
    if isinstance(estimator, SymbolicRegression):
        return _tokens_kept(estimator)
    if isinstance(estimator, HybridSymbolicRegression):
        estimator.symbolic_ = _tokens_kept(estimator.symbolic_)
    return estimator


def _check_configs(workload: str, training_range: dict[str, Any]) -> list:
    """A few configurations inside and beyond the range the model was fit on."""
    module = workloads.get(workload)
    valid = module.square_sides(
        int(training_range["min_side"]), 2 * int(training_range["max_side"])
    )
    sides = sorted({valid[0], valid[len(valid) // 3], valid[2 * len(valid) // 3], valid[-1]})
    return [module.Config((side,) * module.DIMS, batch) for side in sides for batch in (1, 4, 32)]


def convert(directory: Path) -> int:
    """Convert ``directory``'s models.parquet in place; how many rows were pickles."""
    path = directory / "models.parquet"
    table = pq.read_table(path)
    workload = bundle.bundled_evaluation(directory).workload
    blobs, versions, converted = [], [], 0
    for row in table.to_pylist():
        blob = bytes(row["estimator"])
        if not blob.startswith(codec.PICKLE_PREFIX):
            blobs.append(blob)
            versions.append(row["versions_json"])
            continue
        pickled = _TrustedUnpickler(io.BytesIO(blob)).load()
        stored = codec.encode(_current(pickled))
        restored = codec.decode(stored)
        configs = _check_configs(workload, json.loads(row["training_range_json"]))
        frame = config_frame(configs)[json.loads(row["columns_json"])]
        before, after = pickled.predict(frame), restored.predict(frame)
        if not np.array_equal(np.asarray(before), np.asarray(after)):
            raise SystemExit(f"{path}: {row['name']} predicts differently once converted")
        blobs.append(stored)
        versions.append(json.dumps(tables._versions(), sort_keys=True))
        converted += 1
    if not converted:
        return 0
    columns = {"estimator": pa.array(blobs, pa.binary()), "versions_json": pa.array(versions)}
    for name, values in columns.items():
        index = table.schema.get_field_index(name)
        table = table.set_column(index, table.schema.field(index), values)
    pq.write_table(table, path, compression="zstd")
    return converted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="*", type=Path, default=bundle.BUNDLED_RESULTS_DIRS)
    args = parser.parse_args(argv)
    for directory in args.directories:
        converted = convert(directory)
        size = (directory / "models.parquet").stat().st_size
        print(f"{directory}: {converted} pickled model(s) converted; models.parquet {size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
