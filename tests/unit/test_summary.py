"""The size x batch peak table, from constructed runs."""

import pandas as pd

from presentation.summary import networks, peak_table, to_markdown

GIB = 2**30


def test_measured_cells_show_the_median_peak_and_others_their_status(make_record):
    runs = [
        make_record(depth=32, height=32, width=32, batch_size=1, peak_hwm_bytes=1 * GIB),
        make_record(depth=32, height=32, width=32, batch_size=1, peak_hwm_bytes=3 * GIB),
        make_record(depth=32, height=32, width=32, batch_size=1, peak_hwm_bytes=2 * GIB),
        make_record(depth=64, height=64, width=64, batch_size=2, status="oom"),
        make_record(depth=64, height=64, width=64, batch_size=1, status="skipped"),
    ]
    table = peak_table(pd.DataFrame([r.row() for r in runs]))
    assert table.loc["32", "batch 1"] == "2.00 (x3)"
    assert table.loc["64", "batch 2"] == "oom"
    assert table.loc["64", "batch 1"] == "skipped"
    assert table.loc["32", "batch 2"] == ""  # never asked for
    assert to_markdown(table).splitlines()[0] == "| image size | batch 1 | batch 2 |"


def test_2d_images_are_rows_of_their_own(make_record):
    alexnet = {
        "workload": "alexnet",
        "depth": None,
        "base_filters": None,
        "levels": None,
        "upsampling": None,
        "in_channels": 3,
        "classes": 1000,
    }
    runs = [
        make_record(height=224, width=224, batch_size=32, peak_hwm_bytes=3 * GIB, **alexnet),
        make_record(height=227, width=200, batch_size=32, status="oom", **alexnet),
        make_record(height=128, width=128, batch_size=1, peak_hwm_bytes=GIB, **alexnet),
    ]
    table = peak_table(pd.DataFrame([r.row() for r in runs]))
    assert table.index.tolist() == ["128", "227x200", "224"]  # by pixels
    assert table.loc["224", "batch 32"] == "3.00"
    assert table.loc["227x200", "batch 32"] == "oom"


def test_each_network_gets_a_table_of_its_own_never_a_median_across_them(make_record):
    runs = pd.DataFrame(
        [
            make_record(batch_size=1, peak_hwm_bytes=1 * GIB).row(),
            make_record(batch_size=2, peak_hwm_bytes=2 * GIB).row(),
            make_record(batch_size=1, base_filters=8, peak_hwm_bytes=3 * GIB).row(),
        ]
    )

    found = networks(runs)

    assert [label for label, _ in found] == [
        "unet3d: 16 base filters, 5 levels, float32, transpose",
        "unet3d: 8 base filters, 5 levels, float32, transpose",
    ]
    assert peak_table(found[1][1]).iloc[0, 0] == "3.00"
