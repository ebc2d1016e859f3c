"""Work every page run repeats, done once per test process where its answer cannot change.

A page test makes a new `AppTest` and reruns the page after each widget it sets. Each run
checked every chart against the Vega-Lite schema, scanned the installed packages for
Streamlit components and compiled the app's scripts again: with all three done once, a
Sizing page rerun on warm caches costs 0.13-0.14 CPU s instead of 0.35-0.38 (median of 5,
two tries each, Intel Xeon family 6 model 207, 2 cores, loaded).

- Charts: the check is a pure function of the chart and the schema. `remember_valid_charts`
  keeps the charts found valid (by their JSON) and checks every other one in full: an
  invalid chart fails as before, every time.
- Components: the packages do not change while the tests run; `components_scanned_once`
  scans once and hands each later `AppTest` a copy of the same list.
- Scripts: `scripts_compiled_once` keeps the compiled code per script and text, so a script
  changed on disk is compiled again.
- Bundles: the dashboard's first run on a database file checks every bundled evaluation
  against it (`application.bundles.install_every_bundle`, ~0.2 CPU s: two snapshot reads and
  seven checks), and most tests' databases are byte-for-byte copies of a few templates, in
  which there is nothing left to install. `bundles_checked_once` keeps the digest of each
  file's bytes (and its write-ahead log's) that a check left unchanged having installed
  nothing, and answers 0 for the same bytes again; any other file, or one whose check
  installed something, is checked in full.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

Validate = Callable[..., Any]


def remembering(validate: Validate) -> Validate:
    """``validate`` (altair's ``validate_jsonschema``), skipped for a chart already valid."""
    valid: dict[tuple[str, int, int], tuple[object, object]] = {}

    def validate_once(spec: Any, schema: Any, rootschema: Any = None, **kwargs: Any) -> Any:
        try:
            text = json.dumps(spec, sort_keys=True)
        except (TypeError, ValueError):  # not plain JSON: not remembered, checked in full
            return validate(spec, schema, rootschema, **kwargs)
        key = (text, id(schema), id(rootschema))
        if key in valid:
            return None
        error = validate(spec, schema, rootschema, **kwargs)
        if error is None:
            valid[key] = (schema, rootschema)  # held, so their ids are never reused
        return error

    return validate_once


@contextmanager
def wrapped(owner: Any, name: str, wrap: Callable[[Any], Any]) -> Iterator[None]:
    """Within, ``owner.name`` is ``wrap`` of itself; the real one again after."""
    real = getattr(owner, name)
    setattr(owner, name, wrap(real))
    try:
        yield
    finally:
        setattr(owner, name, real)


@contextmanager
def remember_valid_charts() -> Iterator[None]:
    """Within, altair checks each distinct chart against the schema once (see above)."""
    from altair.utils import schemapi

    with wrapped(schemapi, "validate_jsonschema", remembering):
        yield


@contextmanager
def components_scanned_once() -> Iterator[None]:
    """Within, each `AppTest` gets the first scan's components (see above)."""
    from streamlit.components.v2 import manifest_scanner

    real = manifest_scanner.scan_component_manifests
    found: list[Any] = []

    def scan_once(*args: Any, **kwargs: Any) -> list[Any]:
        if not found:
            found.append(real(*args, **kwargs))
        return list(found[0])

    manifest_scanner.scan_component_manifests = scan_once
    try:
        yield
    finally:
        manifest_scanner.scan_component_manifests = real


@contextmanager
def scripts_compiled_once() -> Iterator[None]:
    """Within, every `AppTest` runs the code compiled first for a script's text (see above)."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    real = ScriptCache.get_bytecode
    compiled: dict[tuple[str, bytes], Any] = {}

    def get_bytecode(self: ScriptCache, script_path: str) -> Any:
        key = (os.path.abspath(script_path), Path(script_path).read_bytes())
        if key not in compiled:
            compiled[key] = real(self, script_path)
        return compiled[key]

    ScriptCache.get_bytecode = get_bytecode  # type: ignore[method-assign]
    try:
        yield
    finally:
        ScriptCache.get_bytecode = real  # type: ignore[method-assign]


def file_digest(path: Path) -> bytes | None:
    """A digest of the database file's bytes and of its write-ahead log's; None if missing."""
    digest = hashlib.blake2b(digest_size=32)
    for part in (Path(path), Path(path).with_name(Path(path).name + ".wal")):
        try:
            digest.update(part.read_bytes())
        except FileNotFoundError:
            if part == Path(path):
                return None
            digest.update(b"no wal")
    return digest.digest()


def checking_once(install: Callable[[Path], int]) -> Callable[[Path], int]:
    """``install`` (`install_every_bundle`), skipped for bytes it already left as they were."""
    from modeling.stored import bundle

    nothing_to_do: set[tuple[bytes, tuple[Path, ...]]] = set()

    def install_once(db_path: Path) -> int:
        before = file_digest(db_path)
        key = (before, tuple(bundle.BUNDLED_RESULTS_DIRS))  # a test may change the bundles
        if before is not None and key in nothing_to_do:
            return 0
        installed = install(db_path)
        if installed == 0 and before is not None and file_digest(db_path) == before:
            nothing_to_do.add(key)  # type: ignore[arg-type]
        return installed

    return install_once


@contextmanager
def bundles_checked_once() -> Iterator[None]:
    """Within, the bundles are checked once per distinct database content (see above)."""
    from application import bundles

    with wrapped(bundles, "install_every_bundle", checking_once):
        yield


@contextmanager
def repeated_work_done_once() -> Iterator[None]:
    """All of the above."""
    with ExitStack() as stack:
        stack.enter_context(remember_valid_charts())
        stack.enter_context(components_scanned_once())
        stack.enter_context(scripts_compiled_once())
        stack.enter_context(bundles_checked_once())
        yield
