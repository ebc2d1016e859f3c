"""The application layer: the use cases, composing `profiling` (measures) and `modeling`
(predicts) directly, that the dashboard's pages and the `memplan` command call.

* `application.sizing` — one sizing question in, one answer out (`answer`);
* `application.verify` — verifying an answer by measuring it;
* `application.sweep_job` — running a typed sweep job with its fitted pre-check, or
  launching it as a detached job.

It sits above `profiling` and `modeling` and below `presentation`, `memplan` and
`dashboard` (docs/architecture.md; `tests/unit/test_layers.py` enforces it).
"""
