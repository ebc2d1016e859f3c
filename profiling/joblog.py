"""Reading a launched job's log as a person would: its tail, the sweep's progress, its clocks.

The sweep's progress bar (`profiling.local_sweep.run_sweep`, tqdm) is the job's only
running commentary: points done / total, the point now measured, time elapsed
and left. These helpers read it back from the log, move its clocks on by the
time since it was drawn, and say durations in words. Pure text; no processes.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

# The log tail shown: this many lines, read from at most this many final bytes.
TAIL_LINES = 15
TAIL_BYTES = 64 * 2**10
# tqdm's line from `profiling.local_sweep.run_sweep`:
#   "3/10 points, now 32 batch 2  45%|████▌     | [01:23<01:40]"
_PROGRESS = re.compile(
    r"(?P<done>\d+)/(?P<total>\d+) points(?:, now (?P<point>.+?))?\s+\d+%\|.*?\|"
    r"\s*\[(?P<elapsed>[^<\]]+)<(?P<remaining>[^\]]+)\]"
)


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a log as a terminal shows them (a ``\\r`` rewrites its line)."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - TAIL_BYTES))
            text = log.read().decode(errors="replace")
    except FileNotFoundError:
        return []
    shown = []
    for line in text.split("\n"):
        # A progress bar redraws itself after "\r"; the last non-empty redraw is what shows.
        redraws = [part for part in line.split("\r") if part.strip()]
        if redraws:
            shown.append(redraws[-1].rstrip())
    return shown[-lines:]


def age_s(path: Path) -> float:
    """Seconds since ``path`` was last written; 0 when it does not exist."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return 0.0


def clock_seconds(text: str | None) -> float | None:
    """tqdm's ``"01:23"`` or ``"1:02:03"`` in seconds; None for its ``"?"`` (no rate yet)."""
    try:
        parts = [int(part) for part in (text or "").split(":")]
    except ValueError:
        return None
    if not 2 <= len(parts) <= 3:
        return None
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + part
    return float(seconds)


def live_clock(clock: str | None, log_age_s: float, running: bool, sign: int) -> float | None:
    """A clock read from the log, moved on by the time since the log was written.

    The progress bar is redrawn only when a point starts or ends, so while one
    runs the elapsed time (``sign`` +1) grows, and the time left (-1) shrinks,
    past what the log says.
    """
    seconds = clock_seconds(clock)
    if seconds is None or not running:
        return seconds if sign > 0 else None
    return max(0.0, seconds + sign * log_age_s)


def duration_text(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 04 min``: a duration as a person reads it."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def eta_text(eta_s: float | None, points_left: int | None) -> str:
    """The time left of a running sweep in words; never "0 s left" while a point still runs.

    eta_s : the sweep's estimate counted down since the bar was drawn (`live_clock`), or
        None while it has none. points_left : points not finished, the one in flight included.
    A countdown that reached zero means the point in flight has run past the estimate;
    it is still running, so that is what the text says.
    """
    if eta_s is None:
        return "estimating…"
    if round(eta_s) >= 1:
        return f"{duration_text(eta_s)} left"
    after = max(0, (points_left or 1) - 1)
    if after == 0:
        return "finishing the current point (it is taking longer than estimated)"
    return (
        f"finishing the current point, then {after} more (taking longer than estimated; "
        "a new estimate comes when it ends)"
    )


def eta_caption(
    eta_s: float | None, elapsed_s: float, points_left: int | None, in_flight: bool
) -> str | None:
    """The sidebar's "ETA: ..." line of a running sweep; None before a point is in flight.

    Before the first point starts the panel says the sweep is starting, and a time
    left then ("finishing the current point") would contradict it (issue 26 finding 9).
    """
    if not in_flight:
        return None
    return f"ETA: {eta_text(eta_s, points_left)} ({duration_text(elapsed_s)} elapsed)"


def progress_from_log(tail: list[str]) -> dict[str, str | int]:
    """Points done/total, the current point and the clock from the last progress line."""
    for line in reversed(tail):
        match = _PROGRESS.search(line)
        if match:
            found: dict[str, str | int] = {
                "done": int(match["done"]),
                "total": int(match["total"]),
                "elapsed": match["elapsed"].strip(),
                "remaining": match["remaining"].strip(),
            }
            if match["point"]:
                found["point"] = match["point"].strip()
            return found
    return {}
