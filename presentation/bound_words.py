"""The upper bound in plain words: one sentence a buyer can repeat, the terms on demand.

Every answer rests on a model's upper bound, and its technical name (`modeling.sizing.Basis.bound`,
e.g. "90% conformal upper bound (x1.081, forward-chaining by image size, 3 folds, 12 distinct
configurations)") is exact but not something a buyer can say to a colleague. The pages say
`sentence` first and keep that name, with `GLOSSARY` explaining its words, behind an expander
(issue 42, point 7). Nothing here needs Streamlit.
"""

from __future__ import annotations

EXPANDER_LABEL = "How the bound is made"
# Each term the technical name can hold, in words (Markdown; no user data).
GLOSSARY = (
    "- *conformal upper bound (xR)*: the prediction times R, the ratio of measured to "
    "predicted peak that the stated share of configurations the model was not fitted to "
    "stayed at or under.\n"
    "- *cross-conformal, k folds*: the runs were split k ways; the model was fitted on all but "
    "one part and tested on that part, each part in turn.\n"
    "- *forward-chaining by image size*: the model was fitted on the smaller images and tested "
    "on the next larger ones, as an answer beyond the measured runs is.\n"
    "- *distinct configurations*: how many image, batch and network settings the ratio was "
    "measured on; *thin evidence*: too few for the share, so the bound is the worst ratio seen.\n"
    "- *margin* (the models table): the bound over the prediction, R times any widening for "
    "the machine asked about."
)


def in_ten(coverage: float) -> int:
    """``coverage`` as "N in 10" (0.9 -> 9), at least 1."""
    return max(1, round(coverage * 10))


def sentence(coverage: float) -> str:
    """The bound in one sentence: what it is and how often it held, e.g. for 0.9 "The upper
    bound is the model's prediction plus a safety margin that 9 in 10 measured peaks stayed
    under when the model had not seen them."."""
    return (
        "The upper bound is the model's prediction plus a safety margin that "
        f"{in_ten(coverage)} in 10 measured peaks stayed under when the model had not seen them."
    )


def details(bound: str) -> str:
    """The expander's Markdown: ``bound``, the bound's technical name or what it rests on,
    already escaped by the caller (it is read from a stored evaluation), then `GLOSSARY`."""
    return f"The bound, exactly: {bound}.\n\n{GLOSSARY}"
