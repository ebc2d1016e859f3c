"""A sizing report's content: what one answer says, as plain values, before any HTML.

The report is one self-contained HTML file a procurement team can attach to a
request. `build_report` gathers everything an answer rests on into a `SizingReport`
(plain values): the question (configuration, budget, headroom), the
`modeling.decision.Decision` with its headline and the credible models'
spread, the machine profile it is for, the chosen model's upper bound with
the evidence behind it (coverage, how many distinct held-out configurations,
from which calibration, and "thin evidence" where the bound is the worst of
few), every stored model's estimate with why the left-out ones are left out,
whether a run verified it, the runs it rests on, the Dell EMC / Intel
study's published figures when they are about the same question, the
memplan version and when it was made. The evidence lines are
`presentation.sizing_report_evidence`'s; `presentation.sizing_report_html.render_html`
writes the report out as one self-contained HTML file.

Used by ``memplan report`` and the dashboard's download button.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pandas as pd

from application import sizing
from application.sizing import BUY, Models, SizingQuestion
from application.sizing_each import Outcome, answer_each
from core import published, workloads
from core.profiles import MachineProfile
from core.units import GIB, approx_gib
from core.version import memplan_version
from core.workloads.base import WorkloadConfig
from modeling.decision import Confidence, Decision, ModelEstimate, sampled_aside
from modeling.machines import MachineFacts
from modeling.stored.predictor import Predictor
from presentation import charts_published, sizing_text, workload_labels
from presentation.sizing_report_evidence import (
    RUN_ID_CHARS,
    BoundEvidence,
    ModelLine,
    RunLine,
    published_for,
    run_lines,
    widenings_of,
)
from presentation.text import sentence


@dataclass(frozen=True)
class SizingReport:
    """Everything one downloadable sizing report says, as plain values."""

    config: WorkloadConfig
    budget_gib: float
    headroom_pct: float  # 20 = 20% on top of the bound
    decision: Decision
    machine_words: str  # "for Intel Xeon, ... (profile 9b59349f74; as asked)"
    machine_key: str | None
    machine_note: str  # why it is not this machine's profile, if so; "" otherwise
    onednn_note: str  # what oneDNN does to this answer there (`MachineProfile.onednn_note_for`)
    bound: BoundEvidence | None  # None when no model is credible
    models: tuple[ModelLine, ...]
    runs: tuple[RunLine, ...]
    published_points: tuple[published.PublishedPoint, ...]  # empty unless they apply
    chart: pd.DataFrame = field(compare=False)  # `charts_published.chart_frame`
    version: str = ""  # `memplan_version`
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    command: str = ""  # what produced it, e.g. the CLI command line
    # The memory to buy, the largest image and the largest batch (`application.sizing`).
    outcomes: tuple[Outcome, ...] = ()
    facts: MachineFacts | None = None  # the machine by its facts, never "this machine"
    # Where that profile answers for another machine, which has no models: which, why, how
    # much every bound was widened and from what evidence (`Transfer.sentence`); "" if not.
    transfer: str = ""
    # The profile's cores, what is known of more, and how far the memory to buy widened for
    # them (`application.widening.MoreCores.sentence`); "" where nothing is shipped.
    cores: str = ""

    @property
    def buy(self) -> Outcome | None:
        """The memory to buy: what a purchase request leads with."""
        return next((o for o in self.outcomes if o.kind == BUY), None)

    @property
    def image(self) -> str:
        """``240x240x144`` (every side, even of a cube: a purchase request should not guess)."""
        return workload_labels.shape_label(tuple(self.config.image_shape), one_side=False)

    @property
    def workload_title(self) -> str:
        return workload_labels.title(self.config.workload)

    @property
    def network(self) -> str:
        return workload_labels.network_label(self.config.to_dict(), self.config.workload)

    @property
    def question(self) -> str:
        """The question in words."""
        return (
            f"Does training the {self.workload_title} on {self.image} images at batch "
            f"{self.config.batch_size} ({self.network}) fit {self.budget_gib:,g} GiB of memory "
            f"with {self.headroom_pct:g}% headroom on top of the upper bound?"
        )

    @property
    def headline(self) -> str:
        return sizing_text.headline(self.decision)

    @property
    def tone(self) -> str:
        """``success``, ``warning`` or ``error`` (`sizing_text.headline_tone`)."""
        return sizing_text.headline_tone(self.decision)

    @property
    def answer(self) -> str:
        """The bound, headroom, budget, model and machine in one sentence."""
        return sizing_text.decision_sentence(self.decision, self.image, self.machine_words)

    @property
    def spread(self) -> str:
        """The credible models' bounds, in words (`sizing_text.spread`)."""
        return sizing_text.spread(self.decision)

    @property
    def substituted(self) -> str:
        """Why the asked model does not answer, if it does not (`sizing_text.substituted`)."""
        return sizing_text.substituted(self.decision)

    @property
    def usable(self) -> str:
        text = sizing_text.usable_text(
            self.budget_gib, self.headroom_pct, self.decision.usable_bytes
        )
        return text[:1].upper() + text[1:]

    @property
    def left_out(self) -> list[str]:
        """The left-out models, one line per reason, each named with its figure."""
        return sizing_text.left_out_lines(self.decision)

    @property
    def verified(self) -> bool:
        return self.decision.confidence is Confidence.VERIFIED

    @property
    def verification(self) -> str:
        """Whether a run of exactly this configuration on this profile measured the answer."""
        evidence = self.decision.evidence
        if evidence.untrainable:
            return f"Nothing to verify: {evidence.untrainable}"
        if evidence.measured_peak_bytes is not None:
            runs = ", ".join(run_id[:RUN_ID_CHARS] for run_id in evidence.run_ids)
            peak = evidence.measured_peak_bytes
            aside = sampled_aside(peak, evidence.measured_sampled_bytes, evidence.sample_interval_s)
            where = f"profile {self.machine_key}" if self.transfer else "this machine profile"
            measured = (
                f"{len(evidence.run_ids)} run(s) of exactly this configuration on {where} "
                f"peaked at up to {approx_gib(peak)}{f' ({aside})' if aside else ''} (run {runs})"
            )
            if not self.verified:  # the runs of the profile answering for another machine
                return (
                    f"Not verified on the machine asked about: {measured}, another machine. "
                    "Measure it on a machine of the kind asked about before buying:"
                )
            return f"Verified: {measured}."
        largest = (
            f"; the largest run measured peaked at {approx_gib(evidence.largest_measured_bytes)}"
            if evidence.largest_measured_bytes is not None
            else "; no run of this workload on it finished"
        )
        return (
            f"Not verified: no run of exactly this configuration on the machine profile named above"
            f"{largest}. Measure it on a machine of this profile with enough memory before "
            "buying:"
        )

    @property
    def measure_command(self) -> str:
        """The command that measures the question (knob flags only where not the default)."""
        config = self.config
        defaults = workload_labels.knob_defaults(config.workload)
        flags = [
            f"--{knob.replace('_', '-')} {getattr(config, knob)}"
            for knob in workloads.of(config).NETWORK_KNOBS
            if getattr(config, knob) != defaults.get(knob)
        ]
        return " ".join(
            [
                f"memplan run --workload {config.workload}",
                f"--image-size {self.image} --batch-size {config.batch_size}",
                *flags,
            ]
        )

    @property
    def published_apply(self) -> bool:
        return bool(self.published_points)

    @property
    def published_note(self) -> str:
        """What the published points are, and whether they are about this question."""
        image = "x".join(str(side) for side in published.STUDY_IMAGE_SHAPE)
        about = (
            "They are about this question, so the chart draws them."
            if self.published_apply
            else "They are about another question, so the chart does not draw them."
        )
        return (
            f"The published reference points are the figures of {published.STUDY_SOURCE}, "
            f"for {image} at batch {published.STUDY_BATCH_SIZE} with the reference network, "
            f"on {published.STUDY_STACK}. {about}"
        )

    @property
    def why_ours_differ(self) -> str:
        return published.WHY_OURS_DIFFER

    @property
    def created(self) -> str:
        """``2026-11-23 14:05 UTC``."""
        return self.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")

    @property
    def title(self) -> str:
        return f"memplan sizing report: {self.image} at batch {self.config.batch_size}"


def _model_lines(decision: Decision) -> tuple[ModelLine, ...]:
    """Every model's estimate, in the models' order, and whether it answers or is left out."""
    credibility = decision.credibility
    chosen = decision.estimate.name if decision.estimate else None

    def line(estimate: ModelEstimate) -> ModelLine:
        return ModelLine(
            name=estimate.name,
            title=estimate.title,
            predicted_bytes=estimate.predicted_bytes,
            upper_bytes=estimate.shown_upper_bytes,
            credible=credibility.is_credible(estimate.name),
            reason=credibility.reason(estimate.name),
            answers=estimate.name == chosen,
            fits=sizing_text.fits_cell(decision, estimate.name),
        )

    return tuple(line(estimate) for estimate in credibility.every)


def _bound(
    decision: Decision, chosen: Predictor | None, config: WorkloadConfig
) -> BoundEvidence | None:
    """The answering model's bound with every factor it was widened by; None without one."""
    if chosen is None:
        return None
    widened = widenings_of(chosen.training_range, config)
    return BoundEvidence.of(decision, chosen.bound_for(config), widened)


@dataclass(frozen=True)
class ReportSource:
    """Where a report comes from, and what it says of the machine besides its models."""

    machine_words: str  # the profile in words (`modeling.machines.MachineChoice.sentence`)
    machine_note: str = ""  # why it is not this machine's profile, if so
    profile: MachineProfile | None = None  # its facts, for what oneDNN does to the answer there
    command: str = ""  # what produced it, e.g. the CLI command line
    created_at: datetime | None = None  # default now (UTC)
    version: str | None = None  # default `memplan_version`


def build_report(
    question: SizingQuestion, models: Models, runs: pd.DataFrame, source: ReportSource
) -> SizingReport:
    """The report answering ``question`` (its image, batch, budget, headroom and model).

    models : the stored models of the machine profile (`application.sizing.Models`);
    runs : that profile's runs of the workload, any status (`core.store.load_runs`
    with ``machine=``). The asked model answers where it is credible; another, which
    the report names, where it is not.
    """
    config, profile = question.config, source.profile
    label = profile.label if profile else source.machine_words
    facts = MachineFacts.of(models.machine, profile, label)
    # The facts, not "this machine": meaningless on a purchase request.
    machine_words = facts.sentence if profile is not None else source.machine_words
    models = replace(models, facts=facts)
    decision = sizing.decide(question, models, runs)
    answering = decision.estimate.name if decision.estimate else None
    chosen = next((m for m in models.predictors if m.name == answering), None)
    budget_gib = (question.budget_bytes or 0) / GIB
    points = published_for(config)
    return SizingReport(
        config=config,
        budget_gib=budget_gib,
        headroom_pct=question.headroom_pct,
        decision=decision,
        machine_words=machine_words,
        machine_key=models.machine,
        machine_note=source.machine_note,
        onednn_note=(profile.onednn_note_for(config.precision) if profile else None) or "",
        bound=_bound(decision, chosen, config),
        models=_model_lines(decision),
        runs=run_lines(runs, config),
        published_points=points,
        chart=charts_published.chart_frame(
            runs, config, chosen, published=points, budget_gib=budget_gib
        ),
        version=memplan_version() if source.version is None else source.version,
        created_at=source.created_at or datetime.now(UTC),
        command=source.command,
        outcomes=answer_each(replace(question, kind=BUY), models),
        facts=facts,
        transfer=sentence(models.transfer.sentence()) if models.transfer else "",
        cores=sentence(models.more_cores.sentence) if models.more_cores else "",
    )
