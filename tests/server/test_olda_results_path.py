"""The OLDA drivers' results file (bench/compute/olda_work.py, write_results): a path given
relative to the working directory inside the repository is written there and named relative to
the repository; one outside it is named as given. A relative path used to be written and then
fail the run while it was being named."""

import json
import os
import sys
from pathlib import Path

import pytest

from server_util import IS_REDIS

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "compute"))
olda_work = pytest.importorskip("olda_work")  # needs numpy

pytestmark = pytest.mark.skipif(IS_REDIS, reason="duet's benchmark scripts, not a server")


def test_a_relative_results_path_is_written_and_named(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    rel = Path("build") / f"pytest-olda-results-{os.getpid()}" / "x.json"
    try:
        named = olda_work.write_results(str(rel), "olda-test", "olda-test", {"k": 1}, [{"r": 2}])
        assert named == rel
        assert json.loads((REPO / rel).read_text())["records"] == [{"r": 2}]
    finally:
        (REPO / rel).unlink(missing_ok=True)
        (REPO / rel).parent.rmdir()
    outside = tmp_path / "y.json"
    assert olda_work.write_results(str(outside), "olda-test", "olda-test", {}, []) == outside
    assert outside.exists()
