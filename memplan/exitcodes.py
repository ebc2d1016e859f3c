"""The exit codes every subcommand follows (printed at the end of ``memplan --help``)."""

from core.errors import ERROR_EXIT_CODE, INTERRUPTED_EXIT_CODE

SUCCESS_EXIT_CODE = 0
# `run` measured no ok point, a `sweep` had every point killed, or a `size ... --verify`
# run refuted the answer.
FAILED_EXIT_CODE = 1
# The reader of the output went away (`memplan machines | head`): 128 + SIGPIPE, what a
# shell reports for a writer the closed pipe stopped.
BROKEN_PIPE_EXIT_CODE = 128 + 13

__all__ = [
    "BROKEN_PIPE_EXIT_CODE",
    "ERROR_EXIT_CODE",
    "FAILED_EXIT_CODE",
    "INTERRUPTED_EXIT_CODE",
    "SUCCESS_EXIT_CODE",
]

TABLE = f"""exit codes (every subcommand):
  {SUCCESS_EXIT_CODE:<4}success (`size --verify`: a run verified the answer)
  {FAILED_EXIT_CODE:<4}`run`: no ok point; `sweep`: every point killed; `size --verify`: refuted
  {ERROR_EXIT_CODE:<4}error or bad input: one line `error: ...` on stderr (or a usage message)
  {INTERRUPTED_EXIT_CODE:<4}interrupted by Ctrl-C or SIGTERM; the same command resumes a sweep
  {BROKEN_PIPE_EXIT_CODE:<4}the output's reader closed it (`| head`): the rest was not written
`calibrate` ends with the exit code of its fit (`memplan evaluate`) when that fails."""
