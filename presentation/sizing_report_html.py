"""A `presentation.sizing_report.SizingReport` as one self-contained HTML document.

Inline CSS (with a print stylesheet, so a browser's "Print to PDF" gives a clean
document), the measured-vs-predicted chart as inline SVG drawn offline
(`presentation.charts_published`), no script, no external resource. Every stored or
typed string (model titles, run messages, machine names) goes through Jinja2 with
autoescaping on, so none of it can become markup, and has its control characters
(NUL, ESC, U+202E...) written out as escapes (`presentation.text.escaped_controls`),
so none can hide or reorder the text around it.
"""

from __future__ import annotations

import re

import jinja2
import markupsafe

from core.units import approx_gib
from presentation import charts_published
from presentation.sizing_report import SizingReport
from presentation.text import escaped_controls


def _svg(report: SizingReport) -> str:
    """The chart as SVG markup for inline use: no XML prolog, no namespace URLs."""
    title = [f"{report.image} at batch {report.config.batch_size}"]
    if report.bound is not None:
        title.append(f"model: {escaped_controls(report.bound.title)}")
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


def _shown(value: object) -> object:
    """Every ``{{ value }}`` of the template: a string's control characters escaped."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return escaped_controls(value, keep="\n\t")
    return value


_ENVIRONMENT = jinja2.Environment(
    autoescape=True,
    finalize=_shown,
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
  is {{ buy.answer.found.required_bytes | gib }} of host RAM (the server's main memory, not a
  GPU's); server "GB" are binary (1 GB = 1 GiB).
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
  <p><strong>Credible models:</strong> {{ r.spread }}.</p>
  {% if r.left_out %}
  <p><strong>Left out:</strong></p>
  <ul>
    {% for line in r.left_out %}<li>{{ line }}</li>{% endfor %}
  </ul>
  {% endif %}
  {% if r.substituted %}<p>{{ r.substituted }}</p>{% endif %}
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
  <dt>Budget</dt><dd>{{ "{:,g}".format(r.budget_gib) }} GiB of host RAM
    (1 GB of server RAM = 1 GiB)</dd>
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
{% if r.transfer %}<p id="transfer">{{ r.transfer }}</p>{% endif %}
{% if r.cores %}<p id="cores">{{ r.cores }}</p>{% endif %}
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
