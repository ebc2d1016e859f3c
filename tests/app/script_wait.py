"""AppTest's wait for a script run, without its busy poll.

Streamlit 1.67's `AppTest.run` waits for the page's script thread by polling every
millisecond whether the runner's event list holds SHUTDOWN, scanning the whole list each
time (`streamlit.testing.v1.local_script_runner.require_widgets_deltas`). The list grows
with every element the page sends, and each wake-up takes the GIL from the script being
waited for. `script_runs_joined` waits by joining the script thread instead, which ends
right after SHUTDOWN, with the same timeout and the same error when it passes: a warm
Sizing page run took 0.314 CPU s against 0.323 (median of 8 each, alternated, Intel Xeon
2-core VM, 2026-11-29). A Streamlit without that function or that thread keeps its own wait.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.app.once import wrapped


def joining(poll: Any) -> Any:
    """``require_widgets_deltas`` that joins the script thread (``poll``, the real one, where
    the runner has no thread to join)."""

    def wait(runner: Any, timeout: float = 3) -> None:
        thread = getattr(runner, "_script_thread", None)
        if thread is None:
            return poll(runner, timeout)
        thread.join(timeout)
        if runner.script_stopped():
            return None
        runner.request_stop()
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")

    return wait


@contextmanager
def script_runs_joined() -> Iterator[None]:
    """Within, every `AppTest.run` waits for its script as `joining` does."""
    from streamlit.testing.v1 import local_script_runner

    if not hasattr(local_script_runner, "require_widgets_deltas"):
        yield
        return
    with wrapped(local_script_runner, "require_widgets_deltas", joining):
        yield
