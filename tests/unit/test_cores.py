"""What more cores do to a peak: the shipped measurements (`data/cores/`) and the answers.

Every bundled profile measured 2 cores; a server bought has more. The answers say so, with
the evidence memplan ships, and the memory to buy (only it) widens by the most the peak
rose from 2 cores to more on the evidence's machine (docs/predictions.md, "Cores").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from application import widening
from core import cores
from core.errors import DataFileError
from core.frameworks import TENSORFLOW, TORCH


def test_the_tensorflow_evidence_says_how_far_more_cores_moved_the_peak() -> None:
    evidence = cores.evidence_for(TENSORFLOW)

    assert evidence.core_counts == (1, 2, 4, 8, 16)
    assert evidence.widening_from(2) == pytest.approx(5416288256 / 5155246080)  # 96^3, 8 cores
    said = evidence.sentence(2)
    assert "2 to 16 cores changed the peak by +1.1%…+4.7%" in said
    assert "(at most +5.1%, 96x96x96 batch 4 at 8 cores)" in said
    assert said.endswith("(data/cores/xeon16-cores-2026-11-23.csv)")


def test_nothing_is_widened_beyond_what_was_measured_or_where_the_peak_only_fell() -> None:
    tensorflow, torch = cores.evidence_for(TENSORFLOW), cores.evidence_for(TORCH)

    assert tensorflow.widening_from(16) == 1.0 and tensorflow.widening_from(None) == 1.0
    assert "nothing is measured of more cores than 16" in tensorflow.sentence(16)
    assert torch.widening_from(4) == 1.0  # 4 to 8 and 16 cores: the peak fell
    assert torch.widening_from(2) == pytest.approx(2074333184 / 2044903424)  # 64^3, 4 cores
    assert cores.evidence_for("jax") is None


def test_an_unreadable_evidence_file_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / cores.FILES[TENSORFLOW][0]).write_text("cores,shape\n2,64x64x64\n")
    with pytest.raises(DataFileError, match="cannot read the core-count evidence .*xeon16"):
        cores.evidence_for(TENSORFLOW, tmp_path)


def test_an_answer_says_the_profiles_cores_and_widens_only_what_it_says() -> None:
    more = widening.more_cores(TENSORFLOW, 2)

    assert more.cores == 2 and more.factor == pytest.approx(1.0506, abs=1e-4)
    assert more.sentence.startswith("measured on 2 cores; on one machine (a 16-core Intel Xeon")
    assert more.sentence.endswith(
        "the memory to buy, for a server with more cores, is widened x1.051"
    )
    assert widening.more_cores(TENSORFLOW, 16).sentence.endswith("nothing is widened for it")
