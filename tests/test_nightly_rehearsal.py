"""docs/nightly.md's rehearsal through the command line alone: 20 nights of `tracereplay
simulate` with run-to-run noise (--run-noise), an injected kernel slowdown (--slowdown) from
night 13, dated by --collected-at; `ingest`, then `regressions` finds that night and no other,
and names the slowed kernel once for the metrics that moved together."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from pipelines.cli import main

# 20 simulated nights ingested end to end: CI's slow pass runs it (.ci/run); the regressions
# command keeps its default-run tests in tests/analysis/test_regressions_cli.py
pytestmark = pytest.mark.slow

NIGHTS = 20
FIRST_SLOW = 13


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("rehearsal")
    for night in range(1, NIGHTS + 1):
        slow = ["--slowdown", "8"] if night >= FIRST_SLOW else []
        argv = ["simulate", "--seq-len", "65536", "--chunk", "16384", "--run-noise", "0.02"]
        argv += ["--seed", str(night), *slow, "--collected-at", f"2026-03-{night:02d}T02:00"]
        argv += ["--format", "ascend", "--out", str(root / "raw" / f"night-{night:02d}")]
        assert main(argv) == 0
    warehouse = str(root / "w.duckdb")
    assert main(["ingest", str(root / "raw"), "--warehouse", warehouse, "--no-progress"]) == 0
    return warehouse


def test_the_injected_night_is_found_and_nothing_else(history, capsys) -> None:
    capsys.readouterr()
    assert main(["regressions", "--warehouse", history, "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows and {r["status"] for r in rows} == {"confirmed"}
    assert {r["collected_after"][:10] for r in rows} == {f"2026-03-{FIRST_SLOW:02d}"}
    assert {"ttft_ns", "makespan_ns"} <= {r["metric"] for r in rows}
    ttft = next(r for r in rows if r["metric"] == "ttft_ns")
    # +8 % on the kernels, communication unchanged: TTFT grows by compute's share of it
    assert 0.04 < ttft["magnitude"] < 0.08
    # ops that moved alike (a send and its receive) are listed by kind and name, every time
    ops = [(abs(o["delta_ns"]), o["kind"], o["op"]) for o in ttft["attribution"]["ops"]]
    assert ops == sorted(ops, key=lambda o: (-o[0], o[1], o[2]))
    assert any(a[0] == b[0] for a, b in itertools.pairwise(ops))  # there is a tie to order


def test_the_attribution_is_printed_once_for_metrics_that_moved_together(history, capsys):
    capsys.readouterr()
    assert main(["regressions", "--warehouse", history]) == 1
    out = capsys.readouterr().out
    assert out.count("where the time went") == 1
    block = out.split("where the time went")[0].split("\n\n")[-1].splitlines()
    header, before, after, dated = block[:4]
    assert "ttft_ns" in header and "makespan_ns" in header
    # run ids carry the profiler's collection time (docs/run_identity.md): nights 12 and 13
    assert re.match(r"last run before: ascend-pt-[a-z0-9-]*-20260312-\d{4}-[0-9a-f]{12}$", before)
    assert re.match(r"first run after: ascend-pt-[a-z0-9-]*-20260313-\d{4}-[0-9a-f]{12}$", after)
    # where the first run after it may lie, 95 %: a night or more around night 13
    assert dated.startswith(("first run after it, 95 % set: ", "dated to that run"))
    assert max(len(line) for line in out.splitlines()) <= 120


def test_simulate_rejects_what_it_cannot_draw(tmp_path: Path, capsys) -> None:
    assert main(["simulate", "--ar-rho", "0.5"]) == 2  # correlates --noise, which is 0
    with pytest.raises(SystemExit) as refused:  # refused by the parser: out of (-1, 1)
        main(["simulate", "--ar-rho", "1.5", "--noise", "0.03"])
    assert refused.value.code == 2
    assert "--ar-rho: '1.5': a correlation in (-1, 1) must be < 1" in capsys.readouterr().err
    assert main(["simulate", "--schedule", "single", "--run-noise", "0.02"]) == 2
    assert main(["simulate", "--slowdown", "3", "--slowdown-from", "0.5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["disturbance"] == "x1.03 from 50% of the run"
    assert main(["simulate", "--run-slowdown", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["disturbance"] == "whole run x1.03"
    with pytest.raises(SystemExit) as refused:  # a run cannot take -100 % of its time
        main(["simulate", "--run-slowdown", "-100"])
    assert refused.value.code == 2 and "--run-slowdown: '-100'" in capsys.readouterr().err
    assert main(["simulate", "--outlier-factor", "3"]) == 2  # which chunk?
    assert main(["simulate", "--slowdown-from", "0.5"]) == 2  # which slowdown?
