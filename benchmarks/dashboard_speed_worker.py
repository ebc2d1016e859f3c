"""The worker side of `benchmarks.dashboard_speed`: one fresh process times one page.

`python -m benchmarks.dashboard_speed` starts this in a fresh Python process per
page and database (``--worker PAGE DB``), so each timing includes the page's
cold caches and imports; ``--hold-lock DB`` holds DuckDB's write lock for the
locked slider timings.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core import database as db_file

REPO_ROOT = Path(__file__).resolve().parent.parent
APP = REPO_ROOT / "app.py"
PAGES = {
    "Models": "dashboard/models_page.py",
    "Sizing": "dashboard/sizing_page.py",
    "Sweeps": "dashboard/sweeps_page.py",
}
SIZING = "Sizing"
SLIDERS = ("Batch size", "Image side")
# The number box beside the batch slider (a batch of 16 typed, not slid to): its change.
TYPED = "Or type the batch size"
# The Sizing page's headline figure (it was "Predicted peak" before the page led with the bound).
PREDICTION_METRIC = "Upper bound"
# Slider changes per slider per process, unlocked and locked.
CHANGES_PER_SLIDER = 3
# Long enough for a rerun that waits out the store's whole lock timeout (60 s).
RUN_TIMEOUT_S = 180.0
LOCKED_LINE = "locked"


# --- the worker: one fresh process, one page ---------------------------------------------


# The CPU seconds of this process's last timed run (every thread: the page runs in
# Streamlit's script thread): what the run cost, whatever else shares the cores.
_LAST_CPU_S = [0.0]


def _timed_run(at: Any) -> float:
    started, cpu_started = time.perf_counter(), time.process_time()
    at.run()
    _LAST_CPU_S[0] = time.process_time() - cpu_started
    return time.perf_counter() - started


def _errors(at: Any) -> list[str]:
    return [str(exception.message) for exception in at.exception] + [
        str(error.value) for error in at.error
    ]


def _metric(at: Any, label: str) -> str | None:
    for metric in at.metric:
        if metric.label == label:
            return str(metric.value)
    return None


def _slider(at: Any, label: str) -> Any:
    for slider in at.select_slider:
        if slider.label == label:
            return slider
    found = ", ".join(repr(slider.label) for slider in at.select_slider) or "none"
    raise LookupError(f"no select-slider labelled {label!r} on the page (found: {found})")


def _neighbour(slider: Any) -> int:
    """The option next to the slider's value (the previous one at the end of the range)."""
    values = [int(re.search(r"\d+", option).group()) for option in slider.options]  # type: ignore[union-attr]
    index = values.index(int(slider.value))
    return values[index + 1] if index + 1 < len(values) else values[index - 1]


def _timed_change(at: Any, label: str, change: Callable[[], None]) -> dict[str, Any]:
    """One input change on the page ``at``: ``change`` made, the rerun timed, its effect."""
    before = _metric(at, PREDICTION_METRIC)
    change()
    seconds = _timed_run(at)
    after = _metric(at, PREDICTION_METRIC)
    return {
        "slider": label,
        "seconds": seconds,
        "cpu_s": _LAST_CPU_S[0],
        "changed": before != after,
        "errors": _errors(at),
    }


def _slider_changes(at: Any) -> list[dict[str, Any]]:
    def move(label: str) -> Callable[[], None]:
        return lambda: _slider(at, label).set_value(_neighbour(_slider(at, label)))

    return [
        _timed_change(at, label, move(label))
        for label in SLIDERS
        for _ in range(CHANGES_PER_SLIDER)
    ]


def _typed_changes(at: Any) -> list[dict[str, Any]]:
    """Type the batch slider's neighbour into the box beside it, `CHANGES_PER_SLIDER` times."""

    def type_neighbour() -> None:
        [box] = [box for box in at.number_input if box.label == TYPED]
        box.set_value(_neighbour(_slider(at, SLIDERS[0])))

    return [_timed_change(at, TYPED, type_neighbour) for _ in range(CHANGES_PER_SLIDER)]


@contextlib.contextmanager
def _lock_held_elsewhere(db_path: Path) -> Any:
    """Another process holds a write transaction on ``db_path`` while the block runs."""
    holder = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.dashboard_speed", "--hold-lock", str(db_path)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = holder.stdout.readline().strip()  # type: ignore[union-attr]
        if line != LOCKED_LINE:
            raise RuntimeError(f"the lock holder did not take the lock (said {line!r})")
        yield
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait(timeout=60)


def _lock_refuses_readers(db_path: Path) -> bool:
    """Whether a read-only DuckDB connection to ``db_path`` is refused right now."""
    import duckdb

    try:
        duckdb.connect(str(db_path), read_only=True).close()
    except duckdb.Error as error:
        return "lock" in str(error).lower()
    return False


def _components_found_at_start() -> Any:
    """Streamlit's scan of the installed packages for components, done once, untimed.

    A served app does it once as its server starts (`streamlit.runtime.Runtime`), before
    any visitor; `AppTest` does it in the first run of each instance (~0.3 s at rest, 2 s at
    load 12 on 2 cores), which no visitor waits for. Its private hook; None when this
    Streamlit has none, and then the scan counts in every first render.
    """
    from streamlit.testing.v1 import AppTest

    if not hasattr(AppTest.from_file(str(APP)), "_bidi_component_manager"):
        return None
    from streamlit.components.v2.component_manager import BidiComponentManager

    manager = BidiComponentManager()
    manager.discover_and_register_components(start_file_watching=False)
    return manager


def worker(page: str, db_path: Path, warm: bool = False) -> dict[str, Any]:
    """Time one page in this (fresh) process; see the module docstring.

    warm : first run `dashboard.serve.warm_up` (untimed), as ``scripts/start.sh`` does while
    the server starts, so the first render finds the libraries loaded.
    """
    from streamlit.testing.v1 import AppTest

    if warm:
        from dashboard import serve

        serve.warm_up()

    components = _components_found_at_start()

    def opened() -> Any:
        at = AppTest.from_file(str(APP), default_timeout=RUN_TIMEOUT_S)
        if components is not None:
            at._bidi_component_manager = components
        return at.switch_page(PAGES[page])

    at = opened()
    result: dict[str, Any] = {"first_render_s": _timed_run(at), "errors": _errors(at)}
    result["first_render_cpu_s"] = _LAST_CPU_S[0]
    result["rerun_s"] = _timed_run(at)
    # A second visitor: a new session in the same process, Streamlit's caches already warm.
    result["next_session_s"] = _timed_run(opened())
    if page == SIZING:
        result["changes"] = _slider_changes(at) + _typed_changes(at)
        with _lock_held_elsewhere(db_path):
            result["lock_refused_reader"] = _lock_refuses_readers(db_path)
            result["locked_changes"] = _slider_changes(at) + _typed_changes(at)
    return result


def hold_lock(db_path: Path) -> None:
    """Hold a write transaction on ``db_path`` until stdin closes."""
    with db_file.transaction(db_path) as con:
        con.execute("SELECT count(*) FROM runs").fetchone()
        print(LOCKED_LINE, flush=True)
        sys.stdin.read()
