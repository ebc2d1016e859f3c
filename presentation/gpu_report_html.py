"""The HTML report's GPU section: a GPU sizing answer (`application.gpu_sizing.GpuAnswer`).

``memplan report ... --gpu 80GB`` adds it to the host-RAM report, before the end of
the document (`with_gpu_section`): the headline, the configuration on the GPU asked
about, the table over GPU sizes, what would make it fit, what the answer rests on and
the note that host RAM while training on a GPU is another figure; the same sentences as
``memplan size gpu`` (`presentation.gpu_sizing_text`). Every string is escaped
(Jinja2 autoescape) with its control characters written out, as in the rest of the
report.
"""

from __future__ import annotations

import jinja2

from application.gpu_sizing import GpuAnswer
from presentation import gpu_sizing_text
from presentation.text import escaped_controls

_ENVIRONMENT = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
_ENVIRONMENT.finalize = lambda value: escaped_controls(value) if isinstance(value, str) else value
_ENVIRONMENT.filters["gib"] = lambda value: "–" if value is None else f"{value / 2**30:,.2f} GiB"

_TEMPLATE = _ENVIRONMENT.from_string(
    """<section class="gpu" id="gpu">
<h2 id="gpu-memory">GPU memory: {{ headline }}</h2>
{% if said.check %}
<p>{{ check_line }}</p>
{% endif %}
{% if said.table %}
<table>
<thead><tr><th>GPU</th><th>usable</th><th>floor</th><th>bound</th><th>verdict</th>
<th>why</th></tr></thead>
<tbody>
{% for check in said.table %}
<tr><td>{{ check.card.label }}</td><td>{{ check.card.usable_bytes | gib }}</td>
<td>{{ check.floor_bytes | gib }}</td><td>{{ check.bound_bytes | gib }}</td>
<td>{{ check.verdict.value }}</td><td>{{ check.reason }}</td></tr>
{% endfor %}
</tbody>
</table>
<p>Usable memory is what the framework reports for each card, not its marketing size
(sources: {% for card in sources %}{{ card.size_gb }} GB: {{ card.source }}
{{- "; " if not loop.last }}{% endfor %}).</p>
{% endif %}
{% if said.options %}
<h3>What would make it fit</h3>
<ul>
{% for option in said.options %}
<li>{{ option.change }}: {{ lines[loop.index0] }}</li>
{% endfor %}
</ul>
{% endif %}
<h3>What the GPU answer rests on</h3>
{% for line in evidence %}
<p>{{ line }}</p>
{% endfor %}
{% for note in said.notes %}
<p class="note">{{ note }}.</p>
{% endfor %}
</section>
"""
)


def section_html(said: GpuAnswer) -> str:
    """The GPU answer as one HTML ``<section>``."""
    return _TEMPLATE.render(
        said=said,
        headline=gpu_sizing_text.headline(said),
        check_line=gpu_sizing_text.check_line(said.check) if said.check else "",
        lines=[gpu_sizing_text.check_line(option.check) for option in said.options],
        evidence=gpu_sizing_text.evidence_lines(said.evidence),
        sources=[check.card for check in said.table if check.card.size_gb],
    )


def with_gpu_section(html: str, said: GpuAnswer) -> str:
    """``html`` (a whole report) with the GPU section added before its end."""
    head, end, tail = html.rpartition("</body>")
    if not end:
        return html + section_html(said)
    return f"{head}{section_html(said)}{end}{tail}"
