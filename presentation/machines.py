"""Machine profiles as the pages name and offer them: the machine selector and its words.

Models are fitted per workload and machine profile (`core.profiles`,
`modeling.machines`): the same configuration can peak 2.7x higher on another
kind of CPU. Nothing here needs Streamlit:

* `runs_on` — a runs frame's runs of one profile (`core.profiles.with_keys` keys them);
* `offered`, `default_choice`, `default_option`, `choice_for`, `option_label`, `answer_words` —
  the machine selector of the Models and Sizing pages, and the words every
  answer ends with ("for AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21 —
  this machine");
* `markdown` — a sentence with commands in backticks, for Streamlit.

What a profile without models lacks is `presentation.machine_shortfall`'s; the
Sweeps page's machines compared, `presentation.machines_compared`'s.

Labels and CPU names come from data files: a page shows them with
`presentation.text.plain` (`markdown` for a sentence with commands in
backticks), or in a table, which shows text as text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pandas as pd

from application.machines import asked_profile
from core import profiles
from core.profiles import MachineProfile
from modeling.machines import ASKED, LATEST, THIS_MACHINE, MachineChoice
from presentation import browse
from presentation.text import code, plain

PROFILE_COLUMN = browse.MACHINE
# The selector's option for an evaluation from before profiles, fitted on several machines'
# runs (its loaders take machine=None); a profile key is ten hex digits, so never this.
MIXED = "mixed"
# Why a default was picked when no profile of the workload has models yet.
MOST_RUNS = "the most runs"
# How an answer names why its profile was chosen (`MachineChoice.reason`), where the
# reason itself reads oddly after a dash.
REASON_WORDS = {ASKED: "as chosen"}


def markdown(sentence: str) -> str:
    """``sentence`` for Streamlit's Markdown: text escaped, each ```command``` as a code span.

    Whatever the sentence holds (a CPU name from a data file with a backtick in
    it moves which parts are code), every part is shown literally.
    """
    parts = sentence.split("`")
    return "".join(code(part) if index % 2 else plain(part) for index, part in enumerate(parts))


# --- runs and their profiles ------------------------------------------------------------


def runs_on(runs: pd.DataFrame, key: str) -> pd.DataFrame:
    """The runs of profile ``key`` (`MIXED`: every run)."""
    if key == MIXED:
        return runs
    return profiles.runs_of(runs, key)


def names(found: Mapping[str, MachineProfile | None]) -> dict[str, str]:
    """Each profile's label; with its key where two profiles read the same.

    A label leaves out RAM, the Keras version and the threads, so two profiles
    can share one.
    """
    labels = {key: profile_label(key, profile) for key, profile in found.items()}
    repeated = Counter(labels.values())
    return {
        key: label if repeated[label] == 1 else f"{label} ({key})" for key, label in labels.items()
    }


def profile_label(key: str, profile: MachineProfile | None) -> str:
    if key == MIXED:
        return "runs of several machines"
    return profile.label if profile is not None else f"machine profile {key}"


# --- the machine selector ---------------------------------------------------------------


def option_key(choice: MachineChoice) -> str:
    """The selector's option for ``choice``: its profile key, or `MIXED`."""
    return MIXED if choice.key is None else choice.key


def default_choice(
    fitted_default: MachineChoice | None, known: Mapping[str, MachineProfile], here: MachineProfile
) -> MachineChoice:
    """The profile a page opens on.

    fitted_default : `modeling.machines.choose_machine`'s answer (this machine,
        else the bundled reference, else the latest evaluation), None when no
        profile has models of the workload;
    known : the profiles with runs of the workload, most runs first. Without
        models anywhere: this machine if it has runs, else the profile with the
        most runs, else this machine (whose panel says how to measure it).
    """
    if fitted_default is not None:
        return fitted_default
    if here.key in known or not known:
        return MachineChoice(here.key, known.get(here.key, here), THIS_MACHINE)
    key, profile = next(iter(known.items()))
    return MachineChoice(key, profile, MOST_RUNS)


def offered(
    known: Mapping[str, MachineProfile], here: MachineProfile, default: MachineChoice
) -> dict[str, MachineProfile | None]:
    """The selector's options: profiles with runs (most first), the default's, this machine's.

    This machine is always offered, runs or not: choosing it says how to give it models.
    """
    options: dict[str, MachineProfile | None] = dict(known)
    options.setdefault(option_key(default), default.profile)
    options.setdefault(here.key, here)
    return options


def option_label(key: str, options: Mapping[str, MachineProfile | None], here_key: str) -> str:
    """How the selector names an option: ``AMD EPYC, AVX2, 2 cores, TensorFlow 2.21``, by name.

    The profile key (a hash) is said under the selector, not in it (issue 42, point 7);
    `names` adds it only where two profiles read the same.
    """
    name = names(options)[key]
    return f"{name} — this machine" if key == here_key else name


def default_option(default: MachineChoice, here: MachineProfile) -> str:
    """The selector's option for the page's default: this machine's key where another
    profile answers for it (a transfer, widened), else the default's own (`option_key`)."""
    return here.key if default.transfer is not None else option_key(default)


def choice_for(
    key: str,
    default: MachineChoice,
    options: Mapping[str, MachineProfile | None],
    here: MachineProfile,
) -> MachineChoice:
    """The `MachineChoice` of the option ``key``, by the rule ``memplan size --machine`` answers
    by (`application.machines.asked_profile`): this machine's key is this machine's answer, the
    default's (another profile's, widened, where it has no models); any other profile answers
    for its own machine, as chosen, never widened."""
    if key == default_option(default, here):
        return default
    if key == MIXED:
        return MachineChoice(None, None, LATEST)
    known = {name: profile for name, profile in options.items() if profile is not None}
    if (key in known or key == here.key) and asked_profile(key, known, here) is None:
        # No profile has models (the most runs' is the default): this machine's panel says
        # how to give it some.
        mine = MachineChoice(key, options.get(key) or here, THIS_MACHINE)
        return mine if default.reason == MOST_RUNS else default
    return MachineChoice(key, options.get(key), ASKED)


def profile_choice(
    key: str,
    default: MachineChoice,
    options: Mapping[str, MachineProfile | None],
    here: MachineProfile,
) -> MachineChoice:
    """The `MachineChoice` of the option ``key`` where a page shows a profile's own models
    (the Models page), not an answer: the default's own option, this machine's (what it
    lacks, where it has no models), or another profile as chosen."""
    if key == option_key(default):
        return default
    profile = options.get(key)
    if key == here.key:
        return MachineChoice(key, profile or here, THIS_MACHINE)
    if key == MIXED:
        return MachineChoice(None, None, LATEST)
    return MachineChoice(key, profile, ASKED)


def answer_words(choice: MachineChoice) -> str:
    """``for AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21 — this machine`` (not escaped)."""
    return f"for {choice.label} — {REASON_WORDS.get(choice.reason, choice.reason)}"
