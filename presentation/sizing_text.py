"""The sizing answers and their verdict in words, tables and captions: formatting only.

What the Sizing page, the report and ``memplan report`` say of a `modeling.decision.Decision`
(the verdict: `headline`, `decision_sentence`, `spread`, `substituted`, `headline_tone`,
the models left out: `left_out_lines`), the every-model table (`models_frame`, with
`fits_cell` and `left_out_cell`), the sizing answers' captions (`image_caption`,
`batch_caption`, `memory_caption`, `batch_figure`), what training may use of the budget
(`usable_text`, `budget_delta`) and the refined analytical breakdown (`breakdown_frame`).
Nothing here computes an answer: `application.sizing` does.
"""

from __future__ import annotations

import math

import pandas as pd

from core.analytical import MemoryBreakdown
from core.units import GIB, approx_gib, format_bound
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import MAX_BATCH_SIZE
from modeling import sizing
from modeling.decision import (
    OUTLIER_FACTOR,
    Confidence,
    Credibility,
    Decision,
    ModelEstimate,
    sampled_aside,
)
from presentation import workload_labels
from presentation.text import text_cells

# Reach (image x batch over the largest measured) below this reads "just beyond", no factor.
STATED_REACH = 1.5


def gib(value_bytes: float) -> str:
    return f"{value_bytes / GIB:,.2f} GiB"


def budget_delta(budget_bytes: float, needed_bytes: float) -> tuple[str, str] | None:
    """The budget against what the answer needs, as a metric's delta and its colour.

    "12.3 GiB spare" (green) or "97.1 GiB over" (red: Streamlit's inverse colouring of
    a positive figure), never a negative spare; None when either is not a figure.
    """
    if not (math.isfinite(budget_bytes) and math.isfinite(needed_bytes)):
        return None
    left = budget_bytes - needed_bytes
    if left < 0:
        return f"{approx_gib(-left)} over", "inverse"
    return f"{approx_gib(left)} spare", "normal"


def usable_text(budget_gib: float, headroom_pct: float, usable_bytes: float) -> str:
    """What training may use of the budget, with the arithmetic it rests on.

    Headroom is on top of the bound (`modeling.sizing.memory_to_buy`: bound x
    (1 + headroom) <= memory), so what training may use is the budget divided by
    1 + headroom (`usable_budget_bytes`), not the budget less that percentage of it.
    """
    if headroom_pct == 0:
        return f"all of the {budget_gib:,g} GiB host RAM budget, no headroom kept"
    usable = gib(usable_bytes)
    return (
        f"the {budget_gib:,g} GiB host RAM budget leaves {usable} for training once "
        f"{headroom_pct:g}% headroom is added on top of it "
        f"({usable} + {headroom_pct:g}% = {budget_gib:,g} GiB)"
    )


def image_caption(found: sizing.ImageSizeAnswer, dims: int) -> str:
    following = (
        "every side offered fits"
        if found.next_side is None
        else f"{workload_labels.power(found.next_side, dims)} would need "
        f"{format_bound(found.next_bound_bytes or 0)}"
    )
    return f"Needs up to {gib(found.bound_bytes)} of host RAM; {following}."


def batch_figure(found: sizing.BatchAnswer) -> str:
    """The largest batch as the page shows it: "4096 or more" where the search stopped at
    the most memplan accepts (`MAX_BATCH_SIZE`), not a batch the budget is full at."""
    if found.next_batch is None and found.batch_size == MAX_BATCH_SIZE:
        return f"{found.batch_size:,} or more"
    return str(found.batch_size)


def batch_caption(found: sizing.BatchAnswer) -> str:
    following = (
        f"every batch memplan accepts (up to {MAX_BATCH_SIZE:,}) fits"
        if found.next_batch is None
        else f"batch {found.next_batch} would need {format_bound(found.next_bound_bytes or 0)}"
    )
    return f"Needs up to {gib(found.bound_bytes)} of host RAM; {following}."


def memory_caption(found: sizing.MemoryAnswer) -> str:
    return (
        f"Needs up to {gib(found.bound_bytes)} of host RAM; {gib(found.required_bytes)} "
        f"with {found.headroom:.0%} headroom. Server 'GB' are binary: 1 GB = 1 GiB."
    )


# The breakdown's terms in words, in `MemoryBreakdown`'s order; the optimizer's is
# named after the workload's (`presentation.workload_labels.optimizer`).
BREAKDOWN_TERMS: dict[str, str] = {
    "framework_bytes": "framework",
    "weight_bytes": "weights",
    "gradient_bytes": "gradients",
    "optimizer_bytes": "optimizer ({optimizer})",
    "activation_bytes": "activations",
    "backward_bytes": "backward pass",
    "input_bytes": "input batch",
}


def breakdown_frame(breakdown: MemoryBreakdown, workload: str = DEFAULT_WORKLOAD) -> pd.DataFrame:
    """The refined model's terms for one configuration: ``term, gib, share_pct``, display order.

    The optimizer's term names ``workload``'s optimizer (Adam for the U-Net).
    """
    parts = breakdown.parts()
    total = breakdown.total_bytes
    optimizer = workload_labels.optimizer(workload)
    return pd.DataFrame(
        {
            "term": [BREAKDOWN_TERMS[name].format(optimizer=optimizer) for name in parts],
            "gib": [value / GIB for value in parts.values()],
            "share_pct": [value / total * 100 if total else 0.0 for value in parts.values()],
        }
    )


# Why models are left out of an answer (`modeling.decision.LeftOut.kind`), in words.
LEFT_OUT_WORDS = {
    "no positive prediction": "Predict no positive peak",
    "unbounded": "Give no finite bound",
    "below the floor": "Bound below the closed-form floor, the least share of the refined "
    "closed-form estimate any measured run reached",
    "outlier": f"Bound more than {OUTLIER_FACTOR:g}x away from the models' median bound",
}
# How each confidence colours the headline: green only where evidence backs a "fits".
TONES = {
    (Confidence.VERIFIED, True): "success",
    (Confidence.INSIDE, True): "success",
    (Confidence.BEYOND, True): "warning",
}


def headline_tone(decision: Decision) -> str:
    """``success``, ``warning`` or ``error``: a fit beyond the measured runs is a warning."""
    return TONES.get((decision.confidence, decision.fits), "error")


def decision_sentence(
    decision: Decision, image_label: str, machine: str, *, evidence: bool = True
) -> str:
    """The headline's sentence: the bound, the headroom, the budget, the model, the machine.

    machine : whose models answer, in words (`dashboard.machine_panel.Picked.words`);
    evidence : False leaves out what the bound rests on ("5-fold cross-conformal, ..."),
        which the page says in an expander instead (plain words first, issue 42).
    """
    estimate = decision.estimate
    config = decision.config
    budget = f"{decision.budget_bytes / GIB:,g} GiB host RAM"
    if decision.untrainable:
        return (
            f"{decision.untrainable} Asked: {image_label} at batch {config.batch_size}, {machine}."
        )
    if estimate is None:
        return (
            f"{spread(decision).capitalize()} for {image_label} at batch {config.batch_size}, "
            f"{machine}: measure it before sizing for it."
        )
    headroom = f"{decision.headroom * 100:g}% headroom"
    sentence = (
        f"{image_label} at batch {config.batch_size} needs up to {approx_gib(estimate.upper_bytes)}"
        f" ({estimate.title}; its point prediction is {approx_gib(estimate.predicted_bytes)}), "
        f"{approx_gib(decision.needed_bytes)} with {headroom}, of the {budget} budget; "
        f"{machine}."
    )
    if evidence and estimate.bound_evidence and not estimate.raised_to_closed_form:
        sentence += f" Its bound rests on {estimate.bound_evidence}."
    if decision.confidence is Confidence.BEYOND and estimate.beyond:
        sentence += f" Beyond the measured runs: {estimate.beyond}."
    return sentence


def left_out_lines(decision: Decision) -> list[str]:
    """The models left out of the answer, one line per reason: ``why: title (value), …``."""
    grouped: dict[str, list[str]] = {}
    for out in decision.credibility.left_out:
        grouped.setdefault(out.kind, []).append(f"{out.estimate.title} ({out.figure})")
    return [f"{LEFT_OUT_WORDS[kind]}: {', '.join(titles)}" for kind, titles in grouped.items()]


# Why a model is left out (`modeling.decision.LeftOut.kind`), in a table cell.
LEFT_OUT_CELLS = {
    "no positive prediction": "no positive peak",
    "unbounded": "no finite bound",
    "below the floor": "below closed form",
    "outlier": "bound {times} median",
}
# A verdict not given: the model is left out of the answer, so whether it fits says nothing.
NOT_JUDGED = "–"


def left_out_cell(decision: Decision, name: str) -> str:
    """Why model ``name`` is left out of the answer, in a few words; "" when it is credible."""
    out = decision.credibility.left_out_as(name)
    if out is None:
        return ""
    return LEFT_OUT_CELLS[out.kind].format(times=out.figure.rpartition(", ")[2])


def fits_cell(decision: Decision, name: str) -> str:
    """``yes`` or ``no``: model ``name``'s bound within what training may use of the budget;
    `NOT_JUDGED` for a model left out of the answer."""
    if not decision.credibility.is_credible(name):
        return NOT_JUDGED
    return (
        "yes" if decision.credibility.by_name[name].upper_bytes <= decision.usable_bytes else "no"
    )


def models_frame(decision: Decision) -> pd.DataFrame:
    """Every model's estimate for the question as the page's table shows it, in the models'
    order.

    Short column names so the table fits a 1024 px wide page. A model left out of the
    answer says why in a column of its own (the full reasons are listed under the
    table), gets no "fits" verdict, and shows the bound it is left out for: its
    own, where that fell below the closed form.
    """
    every = decision.credibility.every
    return pd.DataFrame(
        {
            "model": [e.title for e in every],
            "predicted GiB": [e.predicted_bytes / GIB for e in every],
            "bound GiB": [e.shown_upper_bytes / GIB for e in every],
            "margin": [margin_cell(e) for e in every],
            "fits": [fits_cell(decision, e.name) for e in every],
            "left out because": [left_out_cell(decision, e.name) for e in every],
        }
    )


def margin_cell(estimate: ModelEstimate) -> str:
    """The bound shown over the prediction, ``x1.17``: every factor in it (the model's own
    ratio, a machine's widening), where "bound from" gave the model's ratio alone (x1.08
    beside a bound 1.17 times the prediction, issue 42); `NOT_JUDGED` without a positive
    prediction."""
    if not estimate.predicted_bytes > 0 or not math.isfinite(estimate.shown_upper_bytes):
        return NOT_JUDGED
    return f"x{estimate.shown_upper_bytes / estimate.predicted_bytes:.2f}"


# What each column of `models_table` means, said under it (an HTML table has no tooltips).
MODELS_TABLE_NOTE = (
    "*predicted*: the point prediction; *bound*: the model's upper bound, what the verdict "
    "would use (for a model left out, the bound it is left out for); *margin*: the bound over "
    "the prediction; *fits*: the bound plus headroom within "
    "the budget (– for a model left out); *left out because*: empty where the model is "
    "credible here, the reasons in full above the table."
)


def models_table(decision: Decision) -> pd.DataFrame:
    """`models_frame` as text to show in an HTML table, which wraps a long model name or
    reason instead of cutting it as the canvas grid did at 1024 px (issue 26): every
    figure to two decimals, a missing one as MISSING_CELL, every text escaped (a model's
    title is read from the database)."""
    return text_cells(models_frame(decision), {"predicted GiB": "{:,.2f}", "bound GiB": "{:,.2f}"})


def credible_frame(decision: Decision) -> pd.DataFrame:
    """The credible models' ``title, predicted_gib, upper_gib``, as `charts_sizing.bounds`
    draws them."""
    credible = decision.credibility.credible
    return pd.DataFrame(
        {
            "title": [e.title for e in credible],
            "predicted_gib": [e.predicted_bytes / GIB for e in credible],
            "upper_gib": [e.upper_bytes / GIB for e in credible],
        }
    )


def span(credibility: Credibility) -> str:
    """The credible bounds' range, ``159–190 GiB`` (one figure when they agree); "none"."""
    if not credibility.credible:
        return "none"
    low, high = approx_gib(credibility.low_bytes), approx_gib(credibility.high_bytes)
    return low if low == high else f"{low.removesuffix(' GiB')}–{high}"


def spread(decision: Decision) -> str:
    """The credible models' bounds, in words, e.g. "159–190 GiB across 4 of 10 models"."""
    credible = decision.credibility.credible
    total = len(credible) + len(decision.credibility.left_out)
    if decision.untrainable:
        return "none asked: the setting does not train here"
    if not credible:
        return f"no credible model among the {total} stored"
    return f"{span(decision.credibility)} across {len(credible)} of {total} models"


def substituted(decision: Decision) -> str:
    """Why the asked model does not answer, in words; empty when it does."""
    estimate = decision.estimate
    if estimate is None or estimate.name == decision.asked_model:
        return ""
    reason = decision.credibility.reason(decision.asked_model)
    return (
        f"Model {decision.asked_model} is left out here ({reason}), so the answer uses "
        f"{estimate.title}, the highest bound of the credible models."
    )


def reach_words(decision: Decision) -> str:
    """``12x beyond the largest measured run`` or ``beyond the measured range``; for an answer
    from another machine's runs, ``beyond this machine's measured range (another machine's
    runs answer, 12x beyond their largest)``."""
    estimate = decision.estimate
    reach = estimate.reach if estimate else math.nan
    far = math.isfinite(reach) and reach >= STATED_REACH
    if estimate is not None and estimate.another_machine:
        beyond = f", {reach:,.0f}x beyond their largest" if far else ""
        return f"beyond this machine's measured range (another machine's runs answer{beyond})"
    if far:
        return f"{reach:,.0f}x beyond the largest measured run"
    return "beyond the measured range"


def _measured_headline(decision: Decision, measured: float) -> str:
    """The headline of a verdict a run of exactly the question measured."""
    evidence = decision.evidence
    aside = sampled_aside(measured, evidence.measured_sampled_bytes, evidence.sample_interval_s)
    peak = approx_gib(measured) + (f" ({aside})" if aside else "")
    if measured * (1 + decision.headroom) > decision.budget_bytes:
        return f"Does not fit, measured: a run peaked at {peak}"
    if decision.fits:
        if aside:
            return f"Fits, verified by a run: it measured {peak}"
        return f"Fits, verified by a run (measured {peak})"
    return f"Too close to call: a run measured {peak}, which fits, but the upper bound does not"


def headline(decision: Decision) -> str:
    """The verdict worded by its confidence, e.g. "Predicted to fit, 12x beyond …"."""
    if decision.untrainable:
        return "Does not train on this machine profile"
    if decision.estimate is None:
        return "No answer: no model is credible here"
    measured = decision.evidence.measured_peak_bytes
    if decision.confidence is Confidence.VERIFIED and measured is not None:
        return _measured_headline(decision, measured)
    if decision.confidence is Confidence.INSIDE:
        return (
            "Fits by prediction, inside the measured range"
            if decision.fits
            else "Does not fit by prediction, inside the measured range"
        )
    if decision.fits:
        return f"Predicted to fit, {reach_words(decision)}: verify first"
    return f"Predicted not to fit, {reach_words(decision)}"
