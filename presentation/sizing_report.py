"""A sizing answer as one self-contained HTML file a procurement team can attach to a request.

`build_report` gathers everything an answer rests on into a `SizingReport`
(plain values): the question (configuration, budget, headroom), the
`modeling.decision.Decision` with its headline and the credible models'
spread, the machine profile it is for, the chosen model's upper bound with
the evidence behind it (coverage, how many distinct held-out configurations,
from which calibration, and "thin evidence" where the bound is the worst of
few), every stored model's estimate with why the left-out ones are left out,
whether a run verified it, the runs it rests on, the Dell EMC / Intel
study's published figures when they are about the same question, the
memplan version and when it was made. `render_html` writes it out.

The HTML stands alone: inline CSS (with a print stylesheet, so a browser's
"Print to PDF" gives a clean document), the measured-vs-predicted chart as
inline SVG drawn offline (`presentation.charts_published`), no script, no
external resource. Every stored or typed string (model titles, run messages,
machine names) goes through Jinja2 with autoescaping on, so none of it can
become markup.

Used by ``memplan report`` and the dashboard's download button.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import pandas as pd

from application.sizing import (
    BUY,
    MachineFacts,
    Models,
    Outcome,
    SizingQuestion,
    answer_each,
)
from core import published, workloads
from core.profiles import MachineProfile
from core.units import GIB
from core.version import __version__
from core.workloads.base import WorkloadConfig
from modeling.decision import Confidence, Decision, approx_gib, sampled_aside
from modeling.evaluation.bounds import ConformalBound
from presentation import charts_published, sizing_view, workload_labels
from presentation.sizing_view import BoundedModel

REPO_ROOT = Path(__file__).resolve().parents[1]
# The study behind `core.published` trained the U-Net; no other workload's question is its.
STUDY_WORKLOAD = "unet3d"
# A run id is a 32-digit hex; its first 12 name it uniquely (``memplan show``).
RUN_ID_CHARS = 12
COMMIT_CHARS = 12
UNKNOWN_COMMIT = "unknown commit"
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
PEAK_COLUMN = "peak_hwm_bytes"
SAMPLED_COLUMN = "peak_sampled_bytes"


@dataclass(frozen=True)
class BoundEvidence:
    """The chosen model's upper bound at the question, and what stands behind it."""

    model: str  # the model's name
    title: str
    predicted_bytes: float
    upper_bytes: float
    coverage: float  # 0.9: the bound holds for 90% of points like the held-out ones
    ratio: float  # the bound is the point prediction times this
    # Distinct held-out configurations the ratio was taken from; an older evaluation's
    # bound (``legacy``) counted residuals instead, a configuration once per seed.
    n_configurations: int
    source: str  # which calibration, in words: "5-fold cross-conformal, 41 distinct ..."
    thin: bool  # so few configurations that the bound is the worst one seen
    legacy: bool  # stored by an older evaluation: ``n_configurations`` counts residuals
    raised_to_closed_form: bool  # the model's bound fell below the refined closed form
    beyond: str  # how the question lies outside the model's measured range; "" inside

    @classmethod
    def of(cls, decision: Decision, bound: ConformalBound) -> BoundEvidence:
        estimate = decision.estimate
        assert estimate is not None, "only a decision with a model has a bound"
        return cls(
            model=estimate.name,
            title=estimate.title,
            predicted_bytes=estimate.predicted_bytes,
            upper_bytes=estimate.upper_bytes,
            coverage=bound.coverage,
            ratio=bound.ratio,
            n_configurations=bound.n_calibration,
            source=bound.source,
            thin=bound.thin,
            legacy=bound.legacy,
            raised_to_closed_form=estimate.raised_to_closed_form,
            beyond=estimate.beyond,
        )

    @property
    def sentence(self) -> str:
        """The bound in words: what it is, at which coverage, from how much held-out evidence."""
        coverage = f"{self.coverage:.0%}"
        text = (
            f"{self.title} predicts {approx_gib(self.predicted_bytes)}; its {coverage} "
            f"{'split-conformal' if self.legacy else 'conformal'} upper bound is "
            f"{approx_gib(self.upper_bytes)}, the prediction x{self.ratio:.3f}, "
        )
        if self.legacy:
            text += (
                f"the multiplier that covered {coverage} of {self.n_configurations} held-out "
                f"residuals (measured / predicted on runs the model was not fitted on; "
                f"{self.source}). Those residuals count a configuration once per seed (an "
                "older evaluation): re-run `memplan evaluate` for a bound counted "
                "by configuration."
            )
        else:
            text += (
                f"the multiplier that covered {coverage} of {self.n_configurations} distinct "
                "configurations the model was not fitted on (measured / predicted, the worst "
                f"of each configuration's runs; {self.source})."
            )
        if self.thin:
            text += (
                f" Thin evidence: the bound is the worst of only {self.n_configurations} "
                "configurations."
            )
        if self.raised_to_closed_form:
            text += (
                " The model's bound fell below the refined closed-form estimate, which every"
                " measured run exceeded, so the bound is that estimate times the most a run"
                " exceeded it."
            )
        if self.beyond:
            text += (
                f" The guarantee is for points like the held-out ones; this question is beyond "
                f"them: {self.beyond}."
            )
        return text


@dataclass(frozen=True)
class ModelLine:
    """One stored model's estimate for the question, and whether it is believed."""

    name: str
    title: str
    predicted_bytes: float
    upper_bytes: float  # its own bound where it is left out below the closed form
    credible: bool
    reason: str  # why it is left out, in words; "" when credible
    answers: bool  # the model the decision uses
    fits: str = sizing_view.NOT_JUDGED  # yes, no, or NOT_JUDGED when left out


@dataclass(frozen=True)
class RunLine:
    """One run of the machine profile's workload, as the report's table lists it."""

    run_id: str
    image: str  # "128^3" (a cube), "240x240x144"
    batch_size: int
    network: str  # the knobs: "16 filters, float32"
    status: str  # ok, oom, failed, skipped, ...
    peak_gib: float | None  # the kernel's high-water mark; None when it did not finish
    sampled_gib: float | None  # memory_profiler's largest sample; None when it has none
    message: str
    this_config: bool  # a run of exactly the question's configuration

    @property
    def short_id(self) -> str:
        return self.run_id[:RUN_ID_CHARS]


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
        return self.decision.headline

    @property
    def tone(self) -> str:
        """``success``, ``warning`` or ``error`` (`sizing_view.headline_tone`)."""
        return sizing_view.headline_tone(self.decision)

    @property
    def answer(self) -> str:
        """The bound, headroom, budget, model and machine in one sentence."""
        return sizing_view.decision_sentence(self.decision, self.image, self.machine_words)

    @property
    def usable(self) -> str:
        text = sizing_view.usable_text(
            self.budget_gib, self.headroom_pct, self.decision.usable_bytes
        )
        return text[:1].upper() + text[1:]

    @property
    def left_out(self) -> list[str]:
        """The left-out models, one line per reason, each named with its figure."""
        return sizing_view.left_out_lines(self.decision)

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
            return (
                f"Verified: {len(evidence.run_ids)} run(s) of exactly this configuration on this "
                f"machine profile peaked at up to {approx_gib(peak)}"
                f"{f' ({aside})' if aside else ''} (run {runs})."
            )
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


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """The commit checked out at ``root``, read from ``.git`` without running git; None if none.

    Follows ``HEAD`` to its branch, a loose ref or ``packed-refs``; a ``.git``
    file (a worktree) points at the real folder. Uncommitted edits are not seen.
    """
    try:
        git = root / ".git"
        if git.is_file():
            pointer = git.read_text().strip()
            if not pointer.startswith("gitdir:"):
                return None
            git = (root / pointer.removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head if _SHA.match(head) else None
        ref = head.removeprefix("ref:").strip()
        common = git / "commondir"
        shared = (git / common.read_text().strip()).resolve() if common.is_file() else git
        for folder in dict.fromkeys((git, shared)):
            loose = folder / ref
            if loose.is_file():
                sha = loose.read_text().strip()
                return sha if _SHA.match(sha) else None
        packed = shared / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                sha, _, name = line.partition(" ")
                if name.strip() == ref and _SHA.match(sha):
                    return sha
    except (OSError, UnicodeDecodeError):
        return None
    return None


def memplan_version(root: Path = REPO_ROOT) -> str:
    """``memplan 0.2.0, commit 1a2b3c4d5e6f`` (``unknown commit`` without a readable .git).

    The version is `core.version.__version__`, the one the dashboard's footer and
    ``memplan --version`` show; the commit is read from ``root``'s git files.
    """
    commit = git_commit(root)
    return f"memplan {__version__}, " + (
        f"commit {commit[:COMMIT_CHARS]}" if commit else UNKNOWN_COMMIT
    )


def _knobs_default(config: WorkloadConfig) -> bool:
    defaults = workload_labels.knob_defaults(config.workload)
    return all(getattr(config, knob) == value for knob, value in defaults.items())


def published_for(config: WorkloadConfig) -> tuple[published.PublishedPoint, ...]:
    """The study's published points when they are about ``config``; empty otherwise."""
    applies = config.workload == STUDY_WORKLOAD and published.applies_to(
        tuple(config.image_shape), config.batch_size, _knobs_default(config)
    )
    return published.PUBLISHED_POINTS if applies else ()


def _is_config(row: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether a runs row holds the configuration whose stored columns are ``stored``."""
    for column, value in stored.items():
        if value is None:
            continue
        found = row.get(column)
        if found is None or pd.isna(found) or found != value:
            return False
    return True


def run_lines(runs: pd.DataFrame, config: WorkloadConfig) -> tuple[RunLine, ...]:
    """The runs of ``config``'s workload in ``runs``, smallest image x batch first.

    runs : one machine profile's runs (any status). Those of exactly ``config``
    are marked (`RunLine.this_config`).
    """
    mine = workload_labels.runs_of(runs, config.workload)
    stored = workloads.config_columns(config)
    lines = []
    for row in mine.to_dict("records"):
        shape = workload_labels.image_shape(row)
        peak, sampled = row.get(PEAK_COLUMN), row.get(SAMPLED_COLUMN)
        message = row.get("message")
        lines.append(
            (
                math.prod(shape) * int(row["batch_size"]),
                str(row.get("created_at") or ""),
                RunLine(
                    run_id=str(row["run_id"]),
                    image=workload_labels.shape_label(shape, one_side=len(set(shape)) == 1),
                    batch_size=int(row["batch_size"]),
                    network=workload_labels.short_network(row),
                    status=str(row.get("status") or ""),
                    peak_gib=None if peak is None or pd.isna(peak) else float(peak) / GIB,
                    sampled_gib=None if pd.isna(sampled) else float(sampled) / GIB,
                    message="" if message is None or pd.isna(message) else str(message),
                    this_config=_is_config(row, stored),
                ),
            )
        )
    lines.sort(key=lambda entry: (entry[0], entry[2].batch_size, entry[1]))
    return tuple(line for _, _, line in lines)


def _model_lines(models: Sequence[BoundedModel], decision: Decision) -> tuple[ModelLine, ...]:
    credibility = decision.credibility
    estimates = credibility.by_name
    chosen = decision.estimate.name if decision.estimate else None
    return tuple(
        ModelLine(
            name=model.name,
            title=model.title,
            predicted_bytes=estimates[model.name].predicted_bytes,
            upper_bytes=estimates[model.name].shown_upper_bytes,
            credible=credibility.is_credible(model.name),
            reason=credibility.reason(model.name),
            answers=model.name == chosen,
            fits=sizing_view.fits_cell(decision, model.name),
        )
        for model in models
        if model.name in estimates
    )


def build_report(
    models: Sequence[BoundedModel],
    config: WorkloadConfig,
    runs: pd.DataFrame,
    *,
    budget_gib: float,
    headroom_pct: float,
    asked_model: str,
    machine_words: str,
    machine_key: str | None,
    machine_note: str = "",
    profile: MachineProfile | None = None,
    command: str = "",
    created_at: datetime | None = None,
    version: str | None = None,
) -> SizingReport:
    """The report answering ``config`` on ``budget_gib`` with ``headroom_pct`` % headroom.

    models : every stored model of the machine profile (`Predictor` objects,
    `modeling.stored.bundle.load_predictors`); runs : that profile's runs of
    the workload, any status (`core.store.load_runs` with ``machine=``);
    asked_model : a stored model's name (not ``"best"``: resolve it first); the
    answer uses another, and says why, when it is not credible here.
    machine_words : the profile in words (`modeling.machines.MachineChoice.sentence`);
    profile : that profile's facts, for what oneDNN does to the answer there.
    created_at : default now (UTC); version : default `memplan_version`.
    """
    facts = MachineFacts.of(machine_key, profile, profile.label if profile else machine_words)
    if profile is not None:  # the facts, not "this machine": meaningless on a purchase request
        machine_words = facts.sentence
    outcomes = answer_each(
        SizingQuestion(
            kind=BUY,
            workload=config.workload,
            machine=machine_key,
            knobs=tuple((k, getattr(config, k)) for k in workloads.of(config).NETWORK_KNOBS),
            budget_bytes=round(budget_gib * GIB),
            headroom_pct=headroom_pct,
            model=asked_model,
            image_shape=tuple(config.image_shape),
            batch_size=config.batch_size,
        ),
        Models(config.workload, machine_key, tuple(models), asked_model, facts),  # type: ignore[arg-type]
    )
    decision = sizing_view.decision_for(models, config, runs, budget_gib, headroom_pct, asked_model)
    chosen = next(
        (m for m in models if decision.estimate and m.name == decision.estimate.name), None
    )
    bound = BoundEvidence.of(decision, chosen.bound_for(config)) if chosen else None
    points = published_for(config)
    chart = charts_published.chart_frame(
        runs, config, chosen, published=points, budget_gib=budget_gib
    )
    return SizingReport(
        config=config,
        budget_gib=budget_gib,
        headroom_pct=headroom_pct,
        decision=decision,
        machine_words=machine_words,
        machine_key=machine_key,
        machine_note=machine_note,
        onednn_note=(profile.onednn_note_for(config.precision) if profile else None) or "",
        bound=bound,
        models=_model_lines(models, decision),
        runs=run_lines(runs, config),
        published_points=points,
        chart=chart,
        version=memplan_version() if version is None else version,
        created_at=created_at or datetime.now(UTC),
        command=command,
        outcomes=outcomes,
        facts=facts,
    )


def _svg(report: SizingReport) -> str:
    """The chart as SVG markup for inline use: no XML prolog, no namespace URLs."""
    title = [f"{report.image} at batch {report.config.batch_size}"]
    if report.bound is not None:
        title.append(f"model: {report.bound.title}")
    svg = charts_published.chart_svg(
        charts_published.measured_vs_predicted(report.chart, title=title)
    )
    # Inline in HTML the parser puts <svg> in its namespace itself; dropping the
    # declarations leaves the file without a single URL. The chart uses no xlink.
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg, count=2)
    return svg.replace("<svg ", '<svg role="img" aria-label="measured vs predicted chart" ', 1)


def _gib(value_bytes: float | None) -> str:
    """A bound or prediction: three significant figures (`approx_gib`)."""
    return "–" if value_bytes is None else approx_gib(value_bytes)


def _gib_exact(value_gib: float | None) -> str:
    """A measured peak: to the hundredth of a GiB, as measured."""
    return "–" if value_gib is None else f"{value_gib:,.2f} GiB"


_ENVIRONMENT = jinja2.Environment(
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENVIRONMENT.filters["gib"] = _gib
_ENVIRONMENT.filters["gib_exact"] = _gib_exact


def render_html(report: SizingReport) -> str:
    """The report as one self-contained HTML document (inline CSS and SVG, no script)."""
    # The SVG alone is marked safe: vl-convert writes it and escapes the text it draws
    # (a test draws a model title holding markup to check it).
    svg = markupsafe.Markup(_svg(report))
    last_batch = max(report.config.batch_size, charts_published.MIN_LINE_BATCH)
    return _TEMPLATE.render(r=report, svg=svg, last_batch=last_batch)


_TEMPLATE = _ENVIRONMENT.from_string(
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ r.title }}</title>
<style>
  :root { --ink: #1f2328; --muted: #57606a; --rule: #d0d7de; --band: #f6f8fa;
          --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; }
  * { box-sizing: border-box; }
  body { margin: 0; color: var(--ink); background: white;
         font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
  main { max-width: 980px; margin: 0 auto; padding: 24px 28px 40px; }
  h1 { font-size: 26px; line-height: 1.25; margin: 6px 0 10px; }
  h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px;
       border-bottom: 1px solid var(--rule); }
  p { margin: 6px 0; }
  .meta { color: var(--muted); font-size: 13px; }
  .verdict { border-left: 6px solid var(--bad); background: var(--band); padding: 12px 16px;
             margin: 14px 0; }
  .verdict.success { border-color: var(--ok); }
  .verdict.warning { border-color: var(--warn); }
  .verdict h1 { margin-top: 0; }
  .verdict.success h1 { color: var(--ok); }
  .verdict.warning h1 { color: var(--warn); }
  .verdict.error h1 { color: var(--bad); }
  ul { margin: 4px 0; padding-left: 22px; }
  table { width: 100%; border-collapse: collapse; margin: 8px 0; font-size: 13px; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--rule);
           vertical-align: top; }
  td.text { overflow-wrap: anywhere; }
  td.word { white-space: nowrap; }
  #models td:first-child { width: 34%; }
  th { background: var(--band); font-weight: 600; }
  td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
  td.id { font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: nowrap; }
  dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 6px 0; }
  dl.facts dt { color: var(--muted); }
  dl.facts dd { margin: 0; }
  tr.this { background: #fff8c5; font-weight: 600; }
  tr.out td { color: var(--muted); }
  .tag { font-size: 12px; padding: 0 6px; border-radius: 8px; border: 1px solid var(--rule);
         white-space: nowrap; }
  figure { margin: 8px 0; }
  /* As wide as the text, so the chart's labels read at the text's size. */
  figure svg { display: block; width: 100%; max-width: 900px; height: auto; }
  figcaption { color: var(--muted); font-size: 13px; }
  footer { margin-top: 32px; color: var(--muted); font-size: 12px;
           border-top: 1px solid var(--rule); padding-top: 8px; }
  code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px;
         overflow-wrap: anywhere; }
  @page { size: A4; margin: 14mm; }
  @media print {
    body { font-size: 11pt; }
    main { max-width: none; padding: 0; }
    h2 { break-after: avoid; }
    figure, .verdict, dl.facts { break-inside: avoid; }
    tr { break-inside: avoid; }
    thead { display: table-header-group; }
    .verdict, tr.this, th { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  }
</style>
</head>
<body>
<main>
<p class="meta">memplan sizing report · {{ r.created }} · {{ r.version }}</p>
{% set buy = r.buy %}
<section class="verdict buy" id="buy">
{% if buy and buy.answer %}
  <h1>Memory to buy: <span data-figure="memory_gb">{{ buy.answer.found.memory_gb }}</span> GB</h1>
  <p>For {{ r.image }} at batch {{ r.config.batch_size }} ({{ r.network }}): the
  {{ "{:.0%}".format(buy.answer.coverage) }} upper bound,
  {{ buy.answer.found.bound_bytes | gib }}, plus {{ "{:g}".format(r.headroom_pct) }}% headroom
  is {{ buy.answer.found.required_bytes | gib }}; server "GB" are binary (1 GB = 1 GiB).
  Model {{ buy.answer.model_title }}; bound: {{ buy.answer.bound }};
  {{ r.facts.sentence if r.facts else r.machine_words }}.</p>
  {% for warning in buy.answer.warnings %}<p>{{ warning }}</p>{% endfor %}
{% elif buy %}
  <h1>No memory to buy</h1>
  <p>{{ buy.problem }}</p>
{% endif %}
</section>
<section class="verdict {{ r.tone }}" id="decision">
  <h2>{{ r.headline }}</h2>
  <p>{{ r.answer }}</p>
  <p><strong>Credible models:</strong> {{ r.decision.spread }}.</p>
  {% if r.left_out %}
  <p><strong>Left out:</strong></p>
  <ul>
    {% for line in r.left_out %}<li>{{ line }}</li>{% endfor %}
  </ul>
  {% endif %}
  {% if r.decision.substituted %}<p>{{ r.decision.substituted }}</p>{% endif %}
</section>

<h2 id="what-fits">What fits</h2>
<table id="answers">
<thead><tr><th>question</th><th>answer</th><th class="num">upper bound</th></tr></thead>
<tbody>
{% for o in r.outcomes %}
<tr data-kind="{{ o.kind }}">
{% if o.kind == "buy" %}<td>Memory to buy</td>
{% elif o.kind == "image" %}<td>Largest image at batch {{ r.config.batch_size }},
within {{ "{:,g}".format(r.budget_gib) }} GiB
less {{ "{:g}".format(r.headroom_pct) }}% headroom</td>
{% else %}<td>Largest batch at {{ r.image }}, within {{ "{:,g}".format(r.budget_gib) }} GiB
less {{ "{:g}".format(r.headroom_pct) }}% headroom</td>{% endif %}
{% if o.answer %}
{% set f = o.answer.found %}
<td>{% if o.kind == "buy" %}<span data-figure="memory_gb">{{ f.memory_gb }}</span> GB
{% elif o.kind == "image" %}<span data-figure="side">{{ f.side }}</span>
{%- if r.config.image_shape | length == 3 %}^3{% else %}^2{% endif %}
{% else %}batch <span data-figure="batch_size">{{ f.batch_size }}</span>{% endif %}</td>
<td class="num" data-bound-bytes="{{ f.bound_bytes }}">{{ f.bound_bytes | gib }}</td>
{% else %}<td class="text" colspan="2">{{ o.problem }}</td>{% endif %}
</tr>
{% endfor %}
</tbody>
</table>

<h2>The question</h2>
<p>{{ r.question }}</p>
<dl class="facts">
  <dt>Network</dt><dd>{{ r.workload_title }}: {{ r.network }}</dd>
  <dt>Image</dt><dd>{{ r.image }}</dd>
  <dt>Batch size</dt><dd>{{ r.config.batch_size }}</dd>
  <dt>Budget</dt><dd>{{ "{:,g}".format(r.budget_gib) }} GiB (1 GB of server RAM = 1 GiB)</dd>
  <dt>Headroom</dt><dd>{{ "{:g}".format(r.headroom_pct) }}% on top of the upper bound</dd>
  <dt>Usable</dt><dd>{{ r.usable }}</dd>
</dl>

<h2>The machine and network it is for</h2>
<p>Answered {{ r.machine_words }}. The models and runs below are that machine profile's
only: the same configuration can peak much higher on another kind of CPU.</p>
{% if r.facts %}
<dl class="facts" id="machine-facts">
  <dt>CPU</dt><dd>{{ r.facts.cpu or "unknown" }}</dd>
  <dt>Instruction set</dt><dd>{{ r.facts.isa.upper() if r.facts.isa else "unknown" }}</dd>
  <dt>Cores</dt><dd>{{ r.facts.cores if r.facts.cores is not none else "unknown" }}</dd>
  <dt>Framework</dt><dd>{{ r.facts.framework or "unknown" }}</dd>
  <dt>Profile id</dt><dd><code>{{ r.facts.profile or "mixed" }}</code></dd>
</dl>
{% endif %}
{% if r.machine_note %}<p>Note: {{ r.machine_note }}</p>{% endif %}
{% if r.onednn_note %}<p>Note: {{ r.onednn_note }}</p>{% endif %}

<h2>The model and its bound</h2>
{% if r.decision.untrainable %}
<p>{{ r.decision.untrainable }}</p>
{% elif r.bound %}
<p>{{ r.bound.sentence }}</p>
<p>With {{ "{:g}".format(r.headroom_pct) }}% headroom the configuration asks for
{{ r.decision.needed_bytes | gib }} of the {{ "{:,g}".format(r.budget_gib) }} GiB budget.</p>
{% else %}
<p>No stored model is credible for this question: measure it before sizing for it.</p>
{% endif %}

<h2 id="verified">Verified by a run?</h2>
<p>{{ r.verification }}</p>
{% if not r.verified and not r.decision.untrainable %}<p><code>{{ r.measure_command }}</code></p>
{% endif %}

<h2>Measured vs predicted</h2>
<figure id="chart">
{{ svg }}
<figcaption>Image x batch against peak memory, both on log scales. Dots: that machine
profile's measured runs of the same network; lines: the answering model's point prediction and
upper bound for {{ r.image }} at batch 1 to {{ last_batch }}; diamond: the
question{% if r.published_apply %}; triangle and rules: the published study's peak and the
server sizes it tried{% endif %}.</figcaption>
</figure>

<h2>Every model's estimate</h2>
{% if r.decision.untrainable %}
<p>None: no model is asked about a setting that does not train on the machine profile
named above.</p>
{% else %}
<table id="models">
<thead><tr><th>model</th><th class="num">point prediction</th><th class="num">upper bound</th>
<th>fits the budget?</th><th>left out of the answer because</th></tr></thead>
<tbody>
{% for m in r.models %}
<tr class="{{ 'this' if m.answers else ('' if m.credible else 'out') }}">
  <td>{{ m.title }}{% if m.answers %} <span class="tag">answers</span>{% endif %}</td>
  <td class="num">{{ m.predicted_bytes | gib }}</td>
  <td class="num">{{ m.upper_bytes | gib }}</td>
  <td class="word">{{ m.fits }}</td>
  <td class="text">{{ m.reason }}</td>
</tr>
{% endfor %}
</tbody>
</table>
{% endif %}

<h2 id="published">Published reference points</h2>
<p>{{ r.published_note }}</p>
{% if r.published_apply %}
<table>
<thead><tr><th>published figure</th><th class="num">memory</th>
<th>in the study's words</th></tr></thead>
<tbody>
{% for p in r.published_points %}
<tr><td>{{ p.label }}</td><td class="num">{{ "{:,.0f}".format(p.memory_gib) }} GiB</td>
<td>“{{ p.quote }}”</td></tr>
{% endfor %}
</tbody>
</table>
{% endif %}
<p>{{ r.why_ours_differ }}</p>

<h2 id="runs">The runs it rests on</h2>
<p>Every run of the {{ r.workload_title }} on machine profile
{% if r.machine_key %}<code>{{ r.machine_key }}</code>{% else %}(mixed){% endif %}:
{{ r.runs | length }} runs, smallest image x batch first; runs of exactly this configuration are
highlighted. Measured peak: the kernel's high-water mark of the training process, which
the models fit; sampled peak: the largest of memory_profiler's samples, which can miss a
spike shorter than its interval.</p>
<table id="runs-table">
<thead><tr><th>image</th><th class="num">batch</th><th>network</th><th>status</th>
<th class="num">measured peak (high-water mark)</th><th class="num">sampled peak</th>
<th>run id</th><th>message</th></tr></thead>
<tbody>
{% for run in r.runs %}
<tr{% if run.this_config %} class="this"{% endif %}>
  <td class="word">{{ run.image }}
    {%- if run.this_config %} <span class="tag">this question</span>{% endif %}</td>
  <td class="num">{{ run.batch_size }}</td>
  <td class="word">{{ run.network }}</td>
  <td class="word">{{ run.status }}</td>
  <td class="num">{{ run.peak_gib | gib_exact }}</td>
  <td class="num">{{ run.sampled_gib | gib_exact }}</td>
  <td class="id">{{ run.short_id }}</td>
  <td class="text">{{ run.message }}</td>
</tr>
{% endfor %}
</tbody>
</table>

<footer>
<p>{{ r.version }} · created {{ r.created }}{% if r.command %} ·
<code>{{ r.command }}</code>{% endif %}</p>
<p>Memory is in GiB (2<sup>30</sup> bytes); server "GB" are binary, the same unit.
A bound is an upper bound at the stated coverage, never a point prediction: a point
prediction is low half the time.</p>
</footer>
</main>
</body>
</html>
"""
)
