"""The test suite's own promises: collecting it loads no TensorFlow and no PyTorch.

A module that imports TensorFlow, Keras or torch at its top costs every pytest
process (each xdist worker too) seconds and a quarter to half a GiB before a test
has run, even with ``-m "not tensorflow and not torch"``; such tests import it
inside the test or a fixture.
"""

from __future__ import annotations


def test_collecting_the_suite_loads_neither_tensorflow_nor_keras_nor_torch(
    modules_imported_at_collection: list[str],
) -> None:
    assert modules_imported_at_collection == []
