"""AppTest's wait for a page's script, by joining its thread (`tests.app.script_wait`): it
returns when the script ends and still fails, stopping the script, when it runs too long."""

from __future__ import annotations

import threading
import time

import pytest

from tests.app.script_wait import joining


class Runner:
    """What the wait reads of `LocalScriptRunner`: its script thread and its events."""

    def __init__(self, script_s: float) -> None:
        self.stopped = threading.Event()
        self.stop_requested = False
        self._script_thread = threading.Thread(target=self._script, args=(script_s,))
        self._script_thread.start()

    def _script(self, script_s: float) -> None:
        deadline = time.monotonic() + script_s
        while time.monotonic() < deadline and not self.stop_requested:
            time.sleep(0.01)
        self.stopped.set()  # SHUTDOWN, emitted as the thread ends

    def script_stopped(self) -> bool:
        return self.stopped.is_set()

    def request_stop(self) -> None:
        self.stop_requested = True

    def join(self) -> None:
        self._script_thread.join()


def never_polled(runner: Runner, timeout: float = 3) -> None:
    raise AssertionError("the runner has a thread to join")


def test_the_wait_returns_once_the_script_has_ended() -> None:
    runner = Runner(script_s=0.05)

    joining(never_polled)(runner, timeout=30)

    assert runner.script_stopped() and not runner.stop_requested


def test_a_script_past_the_timeout_is_stopped_and_the_run_fails() -> None:
    runner = Runner(script_s=30)

    with pytest.raises(RuntimeError, match=r"timed out after 0.2\(s\)"):
        joining(never_polled)(runner, timeout=0.2)

    assert runner.stop_requested and runner.script_stopped()


def test_a_runner_without_a_script_thread_keeps_streamlits_own_wait() -> None:
    polled: list[float] = []

    joining(lambda runner, timeout=3: polled.append(timeout))(object(), timeout=5)

    assert polled == [5]
