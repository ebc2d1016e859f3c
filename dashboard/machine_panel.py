"""For which machine? The selector of the Models and Sizing pages, and the panel of a profile
without models.

Models are fitted per workload and machine profile (`core.profiles`): the same
configuration can peak 2.7x higher on another kind of CPU, so both pages answer
for one profile, chosen beside the workload. It opens on
`modeling.machines.choose_machine`'s default (this machine when it has models,
else the bundled reference, else the latest evaluation) and says why this
machine's own profile was not used (`MachineChoice.note`). This machine is
always offered, runs or not.

A profile without models gets a panel (`shortfall`): how many configurations
it has, how many a fit needs, the smallest sweep that gives it enough as a
command to copy, and — on this machine, in a dashboard that may write — a
button that launches that sweep and then fits the profile's models through the
sidebar's launcher (`dashboard.sidebar.launch_grid`). Another machine's runs
can only be measured there: the panel says so instead of offering the button.

A profile that `memplan calibrate` calibrated point by point gets, under the
Models page's selector, the points its calibration chose and why
(`calibrated_points`: each one's relative bound width, the widest of how many
candidates).

What to offer and say is `presentation.machines`; this draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from application import calibrate as calibration
from application.machines import MachineChoice
from core import frameworks, profiles
from core.errors import MemplanError
from core.machine import this_profile
from core.profile_frameworks import of_framework, runs_of_framework
from core.profiles import MachineProfile
from dashboard import data, query_state, sidebar
from presentation import calibration_view, machine_shortfall, machines, workload_labels
from presentation.text import code, plain, sentence

MACHINE_HELP = (
    "Models are fitted per machine profile (CPU, instruction set, cores, RAM, framework "
    "versions): the same configuration can peak 2.7x higher on another kind of CPU. The "
    "default is this machine when it has models, else the bundled reference."
)


@dataclass(frozen=True)
class Picked:
    """The machine a page answers for: the option chosen, its `MachineChoice`, the default's."""

    option: str  # a profile key, or `presentation.machines.MIXED`
    choice: MachineChoice
    default: MachineChoice
    here: MachineProfile
    linked: str  # the option the link asks for (the default without one)
    default_option: str  # the selector's option of the default

    @property
    def machine(self) -> str | None:
        """What the loaders take: the key of the profile whose models answer (None: the latest
        evaluation, any profile); for this machine without models, another's (`choice`)."""
        return self.choice.key

    @property
    def answering(self) -> str:
        """The option of the profile whose models and runs answer (`machine`, or `MIXED`)."""
        return machines.option_key(self.choice)

    @property
    def words(self) -> str:
        """``for AMD EPYC, ..., TensorFlow 2.21 — this machine``: plain words, not escaped."""
        return machines.answer_words(self.choice)

    @property
    def is_default(self) -> bool:
        return self.option == self.default_option

    @property
    def as_linked(self) -> bool:
        """Whether the link's other values are this machine's: it was not switched since."""
        return self.option == self.linked


def _known(db: Path, version: data.Version, workload: str) -> dict[str, MachineProfile]:
    """The profiles with runs of ``workload``, most runs first."""
    return profiles.profiles_in(workload_labels.runs_of(data.runs(db, version), workload))


@dataclass(frozen=True)
class Selector:
    """A page's machine selector: what it is for, and how it is drawn."""

    workload: str
    key: str  # the widget's key
    params: query_state.Params  # the page link's parameters ({}: not linked)
    persist: str | None = None  # Streamlit's persist_state, where the page keeps it
    framework: str = frameworks.DEFAULT_FRAMEWORK  # whose profiles it offers
    # The page answers questions (Sizing), by `presentation.machines.choice_for`'s rule,
    # `memplan size --machine`'s: this machine's option is this machine's answer, widened
    # from another profile where it has no models. False: the page shows a profile's own
    # models (Models), and this machine's option what it lacks (`profile_choice`).
    answers: bool = True


def choose(db: Path, version: data.Version, selector: Selector) -> tuple[Picked, list[str]]:
    """The machine selector among the profiles of ``selector.framework``
    (`dashboard.framework_panel`; started from the link's ``machine`` in its ``params``, else
    the default), its key and reason in small print; returns what it says and the link's
    problems. ``db`` and ``version`` are the cache key of the page's loaders.
    """
    workload, key, framework = selector.workload, selector.key, selector.framework
    here = this_profile(framework=framework)
    known = of_framework(_known(db, version, workload), framework)
    fitted = data.fitted_default(db, version, workload, framework)
    default = machines.default_choice(fitted, known, here)
    options = machines.offered(known, here, default)
    default_option = (
        machines.default_option(default, here) if selector.answers else machines.option_key(default)
    )
    linked, problems = query_state.machine_from(selector.params, list(options), default_option)
    if key not in st.session_state or st.session_state[key] not in options:
        st.session_state[key] = linked
    option = st.selectbox(
        "Machine",
        list(options),
        key=key,
        format_func=lambda name: machines.option_label(name, options, here.key),
        help=MACHINE_HELP,
        persist_state=selector.persist,
    )
    chosen_by = machines.choice_for if selector.answers else machines.profile_choice
    choice = chosen_by(option, default, options, here)
    picked = Picked(option, choice, default, here, linked, default_option)
    reason = machines.REASON_WORDS.get(picked.choice.reason, picked.choice.reason)
    answering = picked.answering  # for this machine without models: the profile answering
    shown_key = "" if answering == machines.MIXED else f"Profile {code(answering)} · "
    st.caption(shown_key + plain(reason))
    return picked, problems


def note(picked: Picked) -> None:
    """Why the default is not this machine (`MachineChoice.note`), while the default is shown."""
    if picked.is_default and picked.default.note:
        st.info(machines.markdown(picked.default.note), icon=":material/computer:")


def transfer_note(picked: Picked) -> None:
    """Where the answers for this machine come from another machine's profile (the default
    without models of its own; `MachineChoice.transfer`, which `application.sizing.models_of`
    widens by): which profile answered and why, that it is another machine, how much every
    bound was widened and from what evidence (`Transfer.sentence`)."""
    transfer = picked.choice.transfer
    if transfer is not None:
        st.warning(plain(sentence(transfer.sentence())), icon=":material/swap_horiz:")


def no_bound(picked: Picked) -> bool:
    """Where the answer for this machine would come from another machine's profile that
    differs from it in a first fact no measured pair of other profiles differs in: no bound,
    so no answer, and why, with what to run instead (`Transfer.refusal`, the words
    `application.sizing.models_of` refuses with on every path). True if so (drawn)."""
    transfer = picked.choice.transfer
    if transfer is None or transfer.bounded:
        return False
    st.error(plain(sentence(transfer.refusal())), icon=":material/block:")
    return True


def onednn_note(picked: Picked, precision: str = "float32") -> None:
    """What oneDNN does to an answer at ``precision`` on the picked profile, if anything
    (`MachineProfile.onednn_note_for`): for a profile whose runs had oneDNN off, that one
    variable changes the answer; at a half precision below AVX-512, that it does not."""
    profile = picked.choice.profile
    said = profile.onednn_note_for(precision) if profile is not None else None
    if said:
        st.caption(plain(said))


@st.cache_data(show_spinner=False, max_entries=data.MAX_VERSIONS * 4)
def _calibration_missing(
    db: Path, version: data.Version, workload: str, key: str
) -> tuple[list[tuple[str, int]] | None, float | None]:
    """The calibration grid's points profile ``key`` lacks, and the grid's minutes; None
    without a calibration of ``workload`` (or with an unreadable one)."""
    try:
        found = calibration.calibration_for(workload)
        if found is None:
            return None, None
        return calibration.missing_points(db, found, key), found.minutes
    except MemplanError:
        return None, None


def _reference_points(
    runs: pd.DataFrame, workload: str, key: str, default: MachineChoice
) -> set[tuple[int, int]]:
    """The default-network points of the reference machine: the default's, else the most runs'."""
    others = runs[runs[machines.PROFILE_COLUMN] != key]
    if others.empty:
        return set()
    counts = others[machines.PROFILE_COLUMN].value_counts()
    reference = default.key if default.key in counts.index else counts.index[0]
    return machine_shortfall.default_network_points(machines.runs_on(others, reference), workload)


def shortfall(db: Path, version: data.Version, workload: str, picked: Picked) -> bool:
    """When the chosen profile has no models: what it lacks and how to fix it. True if drawn."""
    key = picked.machine
    if key is None or data.predictors(db, version, workload, key, decoded=False):
        return False
    framework = picked.here.framework
    runs = runs_of_framework(workload_labels.runs_of(data.runs(db, version), workload), framework)
    here = key == picked.here.key
    missing, minutes = _calibration_missing(db, version, workload, key)
    profile = machine_shortfall.ProfileRuns(
        workload,
        key,
        picked.choice.label,
        data.run_counts(db, version, workload).get(key, 0),
        here=here,
        measured=frozenset(
            machine_shortfall.default_network_points(machines.runs_on(runs, key), workload)
        ),
        framework=framework,
    )
    found = machine_shortfall.shortfall(
        profile,
        calibration_missing=missing,
        calibration_minutes=minutes,
        reference=_reference_points(runs, workload, key, picked.default),
    )
    st.warning(machines.markdown(found.message()), icon=":material/build:")
    if found.sweep is None:
        st.code(found.evaluate_command(db), language="bash", wrap_lines=True)
        return True
    st.code(found.sweep.command(db if here else None), language="bash", wrap_lines=True)
    if not here:
        return True  # the message says where it must run instead
    if data.read_only():
        st.caption("This dashboard is read-only: run the command on this machine instead.")
    else:
        _launch_button(db, workload, key, found.sweep)
    return True


def _launch_button(db: Path, workload: str, key: str, sweep: machine_shortfall.Sweep) -> None:
    running = sidebar.sweep_running(db)
    help_text = (
        "A sweep is running on this database (see the sidebar); one at a time."
        if running
        else f"Measures the {sweep.points} points here (those measured already are "
        "skipped), then fits this machine's models; the sidebar shows its progress."
    )
    if st.button(
        "Launch this sweep",
        key=f"launch_profile_{workload}_{key}",
        type="primary",
        disabled=running,
        help=help_text,
    ):
        grid = (sweep.image_sizes, sweep.batch_sizes)
        sidebar.launch_grid(db, workload, grid, key, sweep.framework)


def calibrated_points(db: Path, version: data.Version, workload: str, picked: Picked) -> None:
    """For a profile calibrated point by point (`memplan calibrate`): each chosen point and
    why, under the selector (`presentation.calibration_view`)."""
    key = picked.machine
    if key is None:
        return
    found = calibration_view.calibrated_model(
        data.predictors(db, version, workload, key, decoded=False)
    )
    if found is None:
        return
    with st.expander("How this machine was calibrated", icon=":material/tune:"):
        st.caption(plain(calibration_view.summary(found)))
        st.dataframe(calibration_view.chosen_points(found), hide_index=True)
