# SPDX-License-Identifier: BSD-2-Clause
"""``docs/BENCHMARKS.md``'s offline-analysis tables are the saved runs' tables
(``python -m bench.offline_stream --table docs/benchmarks/offline_stream*.json``): a
figure in the doc changes only with the saved run it comes from."""

import json
from pathlib import Path

import pytest

from bench.offline_stream import table

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("saved", ["offline_stream.json", "offline_stream_20m.json"])
def test_the_doc_shows_the_saved_runs_table(saved):
    run = json.loads((ROOT / "docs" / "benchmarks" / saved).read_text())
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    assert table(run) in doc, f"docs/BENCHMARKS.md lacks the table of {saved}"
