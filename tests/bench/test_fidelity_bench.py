"""`tracereplay bench fidelity` (pipelines/bench/fidelity.py): the rules can fail, the table 2
acceptance lines of issue 34 are met, and the command prints and exits as documented."""

from __future__ import annotations

import json

import pytest

from pipelines.bench.fidelity import (
    Claim,
    _cell,
    _pct,
    _range,
    motivation_claims,
    table2_claims,
)
from pipelines.cli._fidelity import format_claims


def test_rules_fail_on_the_wrong_sign_and_beyond_the_tolerance() -> None:
    assert _pct("s", "c", 0.05, 0.07).met
    assert not _pct("s", "c", 0.05, 0.081).met  # 3.1 pp off
    assert not _pct("s", "c", 0.02, -0.005).met  # within 3 pp, wrong direction
    assert _pct("s", "c", 0.0002, 0.0).met  # no direction below 0.1 %
    assert not _cell("s", "c", 100.0, 103.5, 0.03).met
    assert _cell("s", "c", 100.0, 102.9, 0.03).met
    rows = _range("s", "c", 0.016, 0.036, {"a": 0.06, "b": 0.067, "c": -0.001})
    assert [r.met for r in rows] == [True, False, False]
    missed = Claim("s", "c", 0.1, 0.2, "%", False, "rule")
    assert "MISSED" in format_claims([missed]) and missed.error == "+10.0 pp"


@pytest.fixture(scope="module")
def table2() -> dict[str, Claim]:
    return {c.claim: c for c in table2_claims()}


def test_table2_acceptance_lines_are_met(table2: dict[str, Claim]) -> None:
    for name in (
        "CPP total (TTFT)",
        "DCPP total (TTFT)",
        "VPP total (TTFT)",
        "CPP compute",
        "DCPP compute",
        "VPP compute",
        "DCPP bubble",
        "VPP bubble + exposed comm",
        "VPP bubble share of TTFT",
        "DCPP vs CPP total",
        "VPP vs DCPP total",
        "VPP - DCPP exposed comm (sign)",
        "DCPP / CPP scheduling steps",
    ):
        print(f"{name:32s} paper {table2[name].paper}  model {table2[name].model}")
        assert table2[name].met, name


def test_table2_overlap_ratios_are_claims() -> None:
    """§6.3's overlap ratios (DCPP 0.05 %, VPP 51.75 %) are printed: DCPP's is met, VPP's keeps
    the direction (0 -> about half) and is 6.1 pp high (docs/fidelity.md §5, 2026-12-04)."""
    from pipelines.bench.fidelity import table2_claims

    table2 = {c.claim: c for c in table2_claims()}
    dcpp, vpp = table2["DCPP overlap ratio"], table2["VPP overlap ratio"]
    assert dcpp.paper == 0.0005 and dcpp.met and dcpp.model < 0.001
    assert vpp.paper == 0.5175 and 0.5 < vpp.model < 0.6


def test_motivation_sweep_keeps_the_papers_direction() -> None:
    claims = motivation_claims()
    assert len(claims) == 5 and all(c.met for c in claims), [c for c in claims if not c.met]


def test_fig1b_step_count_is_a_claim_and_missed(table2: dict[str, Claim]) -> None:
    """Fig. 1(b): a 128K prompt in 8 CPP steps (16K budget) and 17 DCPP steps. The model's DCPP
    (online calibration refitted over 30 steps) runs 19: 2.38x against 2.12x, outside 10 %."""
    claim = table2["Fig. 1(b) 128K: DCPP / CPP scheduling steps (17 / 8)"]
    assert claim.model_text == "19 / 8" and claim.model == pytest.approx(19 / 8)
    assert not claim.met and claim.paper == pytest.approx(17 / 8)


def test_cli_prints_json_and_exits_1_on_a_missed_claim(capsys) -> None:
    from pipelines.cli import main

    assert main(["bench", "fidelity", "--section", "motivation"]) == 0
    assert "5 of 5 claims met" in capsys.readouterr().out
    code = main(["bench", "fidelity", "--section", "table2", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert {"section", "claim", "paper", "model", "error", "met", "rule"} <= set(rows[0])
    assert code == (0 if all(r["met"] for r in rows) else 1)
    assert any(not r["met"] for r in rows)  # VPP vs DCPP exposed comm: +48 % vs +35 %


def test_host_quadratic_variant_leaves_table2_and_moves_the_long_sequence_gains() -> None:
    """The host form is identified at 512K only: table 2 is the same under both forms; below
    512K the quadratic form's smaller set-up lets the per-model VPP gains over CPP grow
    (docs/fidelity.md §5: Qwen up to +4.3 % -> +6.2 % against the paper's +7.3 %)."""
    from pipelines.bench.fidelity import all_claims

    calibrated = {c.claim: c for c in all_claims(("table2", "long"))}
    quadratic = {c.claim: c for c in all_claims(("table2", "long"), "host-quadratic")}
    for name, claim in calibrated.items():
        if claim.section == "table 2":
            assert quadratic[name].model == claim.model, name
    for model in ("qwen3-coder-30b-a3b", "deepseek-v3.1", "glm-5.2"):
        name = f"{model}: VPP over CPP, up to"
        assert quadratic[name].model > calibrated[name].model + 0.003, model
    assert quadratic["qwen3-coder-30b-a3b: VPP over CPP, up to"].met


def test_short_packed_variant_trades_one_short_claim_for_another() -> None:
    """Several requests per step (the paper's batching): Qwen's VPP ~ DCPP is met there, its
    regression against CPP is lost (docs/fidelity.md §5: the trade-off)."""
    from pipelines.bench.fidelity import all_claims, short_sequence_claims

    one = {c.claim: c for c in short_sequence_claims()}
    packed = {c.claim: c for c in all_claims(("short",), "short-packed")}
    regression = "qwen: VPP vs CPP, worst (regression)"
    parity = "qwen3-coder-30b-a3b: VPP ~ DCPP (no regression, within 3 %)"
    assert one[regression].met and not one[parity].met
    assert packed[parity].met and not packed[regression].met
    with pytest.raises(ValueError, match="variant"):
        all_claims(("short",), "no-such-variant")


def test_ablation_prints_the_un_overlapped_comm_and_compute_spread() -> None:
    """§6.4: "VPP-Async cut the un-overlapped communication by 48 %" is printed and missed with
    the wrong sign (the model books VPP-Async's wait inside a posted receive as communication,
    vanilla VPP's wait for a blocking handshake as idle: docs/fidelity.md §5); the variants'
    compute spread (paper: at most 0.42 %) is met."""
    from pipelines.bench.fidelity import ablation_claims

    claims = {c.claim: c for c in ablation_claims()}
    comm = claims["VPP-Async un-overlapped comm vs vanilla"]
    assert comm.paper == -0.48 and comm.model > 0 and not comm.met
    spread = claims["compute spread over the variants"]
    assert spread.met and spread.model <= 0.0042


def test_chunk_size_claim_counts_vpps_budget_only() -> None:
    """§6.5's "24K best on long sequences" is a VPP design choice (the paper note's §4.6 table
    and §7.7: the remainder chunk runs in VPP's drain), so the claim counts VPP-Async's best
    budget over 3 models x 128K-512K (9 picks), not CPP's. CPP's best budget is 16K in most of
    them: counting it too (the reading before) halves the share."""
    from pipelines.bench.fidelity import DEEPSEEK, GLM, QWEN, K, best, chunk_size_claims

    claim = chunk_size_claims()[0]
    assert claim.claim.startswith("VPP: 24K best") and "of 9" in claim.model_text
    assert claim.met and claim.model == pytest.approx(8 / 9)
    cpp = [best(m, n, "cpp")["chunk_size"] for m in (QWEN, DEEPSEEK, GLM) for n in (128 * K,)]
    assert all(c != 24 * K for c in cpp)
