"""Whether a sizing answer can be verified on this machine, and the most a run may use here.

Only an answer for this machine's profile can be verified here (another kind of
machine peaks differently), and only under a limit this machine can give
without swapping; otherwise the reason, with the Slurm command that would
measure it on a machine of that profile (`application.verify.slurm_command`).
"""

from __future__ import annotations

from application.verify import Claim, slurm_command
from core.units import gib_words
from profiling import sweep


def safe_limit_bytes() -> int:
    """The most a run may use on this machine now (`profiling.sweep.default_memory_limit_bytes`)."""
    return sweep.default_memory_limit_bytes()


def refusal(claim: Claim, here: str, safe_bytes: int) -> str | None:
    """Why ``claim`` cannot be verified on this machine (profile ``here``); None if it can.

    safe_bytes : int, bytes; the most a run may use here (`safe_limit_bytes`).
    Only an answer for this machine's profile can be verified here (another
    kind of machine peaks differently), and only under a limit this machine can
    give without swapping.
    """
    if claim.machine is None:
        return (
            "this answer rests on the runs of several machines: only an answer for one "
            "machine profile can be verified, on a machine of that profile"
        )
    if claim.machine != here:
        label = f"machine profile {claim.machine}"
        if claim.machine_label:
            label = f"{claim.machine_label} (profile {claim.machine})"
        return (
            f"this answer is for {label}, not this machine (profile {here}): verifying it "
            "needs a run on a machine of that profile (the same command, run there)"
        )
    if claim.budget_bytes > safe_bytes:
        fraction = f"{sweep.DEFAULT_MEMORY_FRACTION:.0%}"
        reserve = gib_words(sweep.HOST_RESERVE_BYTES)
        return (
            f"the {gib_words(claim.budget_bytes)} budget is more than this machine can safely "
            f"give a run now ({gib_words(max(safe_bytes, 0))}: at most {fraction} of its RAM, "
            f"keeping {reserve} free for the host): measure it on a bigger machine (its runs "
            "count for that machine's own profile), e.g. a Slurm node with that memory: "
            f"`{slurm_command(claim)}` (docs/slurm.md)"
        )
    return None
