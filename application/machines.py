"""Which machine profile an answer is for, and what each profile holds or lacks.

A typed door to `modeling.machines` (the profile a question is answered for:
`choose_machine`, `MachineChoice`, the runs per profile), `modeling.transfer`
(a profile without models answered from the nearest measured one) and
`profiling.calibration` (the profiles table `memplan machines` prints, the
calibration grid and the points a profile still lacks), so the pages and
`memplan machines` / `memplan size` import `application`, never those.

`asked_profile` is the one rule for which machine an answer is for, on the Sizing
page (its selector and its link's ``machine``), ``memplan size`` and ``memplan
report`` (``--machine``): a profile named is answered for its own machine, from its
own models, never widened for another machine; naming none, or naming this
machine's own profile, the answer is for this machine: from its own models, else
another profile's, every bound widened by the transfer factor (`choose_machine`'s
default, `modeling.machines.default_for`). Every bound also widens by its profile's
host-to-host spread (`application.widening.with_host_spread`), on every path.
"""

from __future__ import annotations

from collections.abc import Mapping

from application import bundles
from core import frameworks, profiles
from core.errors import NoModelsError
from core.profile_frameworks import check_framework
from core.profiles import MachineProfile
from core.snapshot import Snapshot
from modeling import machines
from modeling.evaluation.protocol import MIN_POINTS
from modeling.machines import ASKED, MachineChoice, run_counts
from modeling.transfer import Transfer
from profiling.calibration import calibration_for, missing_points, profile_table

__all__ = [
    "MIN_POINTS",
    "asked_profile",
    "MachineChoice",
    "Transfer",
    "calibration_for",
    "choose_machine",
    "missing_points",
    "profile_table",
    "run_counts",
]


def asked_profile(
    requested: str | None, known: Mapping[str, MachineProfile], here: MachineProfile
) -> MachineProfile | None:
    """The profile whose own machine an answer is for (see the module docstring); None: this
    machine (``requested`` None, or naming ``here``'s key or a unique prefix of it).

    known : the profiles with runs. An unknown or ambiguous ``requested`` is refused with
    every known profile listed (`core.profiles.resolve`).
    """
    if requested is None:
        return None
    chosen = profiles.resolve(requested, {**known, here.key: known.get(here.key, here)})
    return None if chosen.key == here.key else chosen


def choose_machine(
    read: Snapshot,
    requested: str | None = None,
    precision: str = "float32",
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> MachineChoice:
    """The profile of ``framework`` a question of ``read``'s workload is answered from, and
    for which machine (`asked_profile`): the one named, as asked, or this machine's default
    (`modeling.machines.choose_machine`), another machine's profile widened where it has no
    models. ``precision`` is the question's: this machine's profile can depend on it."""
    # A new database is seeded (`application.bundles`); this one exists and holds nothing.
    if read.runs.empty and not machines.fitted_machines(read):
        raise NoModelsError(bundles.empty_database_hint(read.source, read.workload))
    # This machine as `modeling.machines` takes it for the default: one place to pin it.
    here = machines.this_profile(precision, framework)
    chosen = asked_profile(requested, machines.run_profiles(read), here)
    if chosen is None:
        return machines.choose_machine(read, None, precision, framework)
    check_framework(chosen, framework)
    return MachineChoice(chosen.key, chosen, ASKED)
