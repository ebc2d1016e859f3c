"""The sidebar's default memory limit is the same on every visit (issue 26, finding 9).

It was 75% of RAM or the memory available less 2 GiB, whichever was smaller,
so it moved with whatever else ran (11.3 to 17.6 GiB seen on a 23.5 GiB VM).
Now it is 75% of the total RAM; each point still checks the memory available.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from profiling import requests, sweep
from tests.app.helpers import APP

GIB = 2**30
TOTAL_BYTES = 32 * GIB


def memory_limit_box(available_bytes: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Memory limit a new visitor sees while ``available_bytes`` of memory are free."""
    memory = SimpleNamespace(total=TOTAL_BYTES, available=available_bytes)
    monkeypatch.setattr(sweep.psutil, "virtual_memory", lambda: memory)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    return at.sidebar.text_input(key="launch_memory_limit").value


def test_the_default_memory_limit_does_not_follow_the_memory_available(
    shared_reference_db, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = memory_limit_box(6 * GIB, monkeypatch)
    idle = memory_limit_box(30 * GIB, monkeypatch)

    assert busy == idle == requests.memory_limit_text(int(0.75 * TOTAL_BYTES)) == "24.0GiB"
