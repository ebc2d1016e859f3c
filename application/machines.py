"""Which machine profile an answer is for, and what each profile holds or lacks.

A typed door to `modeling.machines` (the profile a question is answered for:
`choose_machine`, `MachineChoice`, the runs per profile), `modeling.transfer`
(a profile without models answered from the nearest measured one) and
`profiling.calibration` (the profiles table `memplan machines` prints, the
calibration grid and the points a profile still lacks), so the pages and
`memplan machines` / `memplan size` import `application`, never those.
"""

from __future__ import annotations

from modeling.evaluation.protocol import MIN_POINTS
from modeling.machines import MachineChoice, choose_machine, run_counts
from modeling.transfer import Transfer
from profiling.calibration import calibration_for, missing_points, profile_table

__all__ = [
    "MIN_POINTS",
    "MachineChoice",
    "Transfer",
    "calibration_for",
    "choose_machine",
    "missing_points",
    "profile_table",
    "run_counts",
]
