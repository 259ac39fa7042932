"""The VPP paper's DeepSeek-V3.1 512K table (§4 and §6.3 table 2, TP8 + PP2, 24K chunks), side
by side with the calibrated preset under the calibration protocol (pipelines/sim/calibration.py,
docs/fidelity.md §1-2). Acceptance of issue 34: totals within 3 %, compute within 5 %, DCPP
bubble within 15 %, VPP bubble + exposed comm within 15 %, VPP bubble <= 1 % of TTFT, VPP vs
DCPP total within +-2 pp of -12.53 %, DCPP vs CPP total within +-2 pp of +4.65 %, VPP's
exposed comm above DCPP's, DCPP / CPP scheduling steps within 10 % of 4.4x."""

from __future__ import annotations

import pytest

from pipelines.bench.fidelity import profiler_bubble_ratio
from pipelines.ingest.load import ingest_paths
from pipelines.sim.calibration import TABLE2, table2_run
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import open_store

K = 1024
PAPER = TABLE2
PAPER_STEP_RATIO = 4.4


@pytest.fixture(scope="module")
def table() -> dict[str, dict]:
    return {s: table2_run(s) for s in PAPER}


def _parts(m: dict) -> tuple[float, float, float, float]:
    keys = ("compute_ns", "bubble_ns", "exposed_comm_ns", "makespan_ns")
    return tuple(m[k] / 1e9 for k in keys)  # type: ignore[return-value]


def test_512k_table_side_by_side(table: dict[str, dict]) -> None:
    print(f"\n{'schedule':10s} {'part':8s} {'model s':>9s} {'paper s':>9s} {'error':>8s}")
    for s, paper in PAPER.items():
        for part, got, want in zip(
            ("compute", "bubble", "exposed", "total"), _parts(table[s]), paper, strict=True
        ):
            print(f"{s:10s} {part:8s} {got:9.2f} {want:9.2f} {got / want - 1:+8.1%}")
    for s, paper in PAPER.items():
        compute, _, _, total = _parts(table[s])
        assert total == pytest.approx(paper[3], rel=0.03), s
        assert compute == pytest.approx(paper[0], rel=0.05), s
    assert table["dcpp"]["bubble_ns"] / 1e9 == pytest.approx(PAPER["dcpp"][1], rel=0.15)
    _, bubble, exposed, total = _parts(table["vpp_async"])
    assert bubble + exposed == pytest.approx(sum(PAPER["vpp_async"][1:3]), rel=0.15)
    assert bubble <= 0.01 * total
    ratio = table["dcpp"]["scheduling_steps"] / table["cpp"]["scheduling_steps"]
    print(f"DCPP/CPP steps {ratio:.2f} (paper {PAPER_STEP_RATIO})")
    assert ratio == pytest.approx(PAPER_STEP_RATIO, rel=0.10)


def test_512k_differences_match_the_paper(table: dict[str, dict]) -> None:
    cpp, dcpp, vpp = (table[s]["makespan_ns"] for s in ("cpp", "dcpp", "vpp_async"))
    print(f"DCPP vs CPP {dcpp / cpp - 1:+.2%} (+4.65 %)")
    print(f"VPP vs DCPP {vpp / dcpp - 1:+.2%} (-12.53 %)")
    assert vpp < cpp < dcpp
    assert abs(dcpp / cpp - 1 - 0.0465) <= 0.02
    assert abs(vpp / dcpp - 1 + 0.1253) <= 0.02
    # VPP's exposed comm rises over DCPP's (paper +7.95 s): async ranks wait in posted receives
    assert table["vpp_async"]["exposed_comm_ns"] > table["dcpp"]["exposed_comm_ns"]
    assert table["dcpp"]["exposed_comm_ns"] > table["cpp"]["exposed_comm_ns"]


def test_without_the_host_cost_the_cpp_total_misses(table: dict[str, dict]) -> None:
    """The host set-up cost is what closes the CPP total: without it the CPP bubble is the
    pipeline's own (fill, drain, imbalance) and the total falls 3.8 % short."""
    plain = summarize(simulate(512 * K, "cpp", chunk_size=24 * K))
    assert plain["makespan_ns"] / 1e9 < 0.97 * PAPER["cpp"][3]
    gap = (table["cpp"]["makespan_ns"] - plain["makespan_ns"]) / 1e9
    assert gap == pytest.approx(512 * K * 23_140e-9, rel=0.01)


# seed 000 §7.6: 256K tokens, 32K chunks (N = 8), three concurrent requests
ABLATION_PAPER = {"vpp": (0.110, 0.0), "vpp_async": (0.083, -0.0313), "vpp_pack": (0.024, -0.0689)}


@pytest.fixture(scope="module")
def ablation() -> dict[str, dict]:
    requests = [256 * K] * 3
    runs = {s: simulate(requests, s, chunk_size=32 * K) for s in ("vpp", "vpp_async")}
    runs["vpp_pack"] = simulate(requests, "vpp_pack", chunk_size=32 * K, pack_window=None)
    return {s: summarize(r) | {"windows": r.meta["pack_windows"]} for s, r in runs.items()}


def test_ablation_side_by_side(ablation: dict[str, dict]) -> None:
    vanilla = ablation["vpp"]["makespan_ns"]
    print(
        f"\n{'variant':10s} {'bubble':>8s} {'paper':>7s} {'exposed':>8s} {'E2E':>7s} {'paper':>7s}"
    )
    for s, (bubble, e2e) in ABLATION_PAPER.items():
        m = ablation[s]
        change = m["makespan_ns"] / vanilla - 1
        print(
            f"{s:10s} {m['bubble_ratio']:8.2%} {bubble:7.1%} {m['exposed_comm_ratio']:8.2%} "
            f"{change:+7.2%} {e2e:+7.2%}"
        )
    assert ablation["vpp_pack"]["windows"] == [3, 3]  # Algorithm 2's estimate at N = 8
    # vanilla bubble within 15 % of 11.0 %; the async swap's E2E gain within 15 % of 3.13 %
    assert ablation["vpp"]["bubble_ratio"] == pytest.approx(0.110, rel=0.15)
    async_gain = 1 - ablation["vpp_async"]["makespan_ns"] / vanilla
    assert async_gain == pytest.approx(0.0313, rel=0.15)
    # packing: gain 6.89 % in the paper, larger here (no host-side cost of a packed step)
    pack_gain = 1 - ablation["vpp_pack"]["makespan_ns"] / vanilla
    assert 0.0689 <= pack_gain <= 0.0689 * 1.35
    assert ablation["vpp_async"]["overlap_ratio"] == pytest.approx(0.5403, rel=0.15)
    assert ablation["vpp"]["overlap_ratio"] < 0.001  # paper 0.02 %


@pytest.mark.xfail(
    strict=True,
    reason="the simulator's own accounting (one window for all ranks, a wait inside a posted "
    "receive is communication) leaves 1.6 % after the swap; the product's metric meets it below",
)
def test_ablation_async_and_pack_bubbles_at_8_3_and_2_4_percent(ablation: dict[str, dict]) -> None:
    assert ablation["vpp_async"]["bubble_ratio"] == pytest.approx(0.083, rel=0.15)
    assert ablation["vpp_pack"]["bubble_ratio"] == pytest.approx(0.024, rel=0.15)


def test_ablation_bubbles_by_the_products_metric(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same three runs written as torch_npu folders, ingested, and read from
    fct_run_metrics: bubble_ratio as docs/metrics.md defines it (each rank over its own window,
    the wait inside a send or receive counted as bubble, as a profiler timeline of one device
    shows it) is within 15 % of the paper's 11.0 / 8.3 / 2.4 %."""
    root = tmp_path_factory.mktemp("ablation")
    requests = [256 * K] * 3
    runs = {s: simulate(requests, s, chunk_size=32 * K) for s in ("vpp", "vpp_async")}
    runs["vpp_pack"] = simulate(requests, "vpp_pack", chunk_size=32 * K, pack_window=None)
    for s, result in runs.items():
        write_ascend_pt(result, root / s)
    folders = [root / s for s in runs]
    con = open_store(root / "warehouse.duckdb").open()
    try:
        ingest_paths(folders, con, progress=False)
        measured = dict(
            con.execute("select schedule, bubble_ratio from fct_run_metrics").fetchall()
        )
    finally:
        con.close()
    print(f"\n{'variant':10s} {'bubble (fct_run_metrics)':>24s} {'paper':>7s}")
    for s, (paper, _) in ABLATION_PAPER.items():
        print(f"{s:10s} {measured[s]:24.2%} {paper:7.1%}")
    assert set(measured) == set(ABLATION_PAPER)
    # bench fidelity's per-rank figure is this metric, computed on the simulator's tables
    for s, result in runs.items():
        assert profiler_bubble_ratio(result) == pytest.approx(measured[s], abs=1e-6), s
    for s, (paper, _) in ABLATION_PAPER.items():
        assert measured[s] == pytest.approx(paper, rel=0.15), s
