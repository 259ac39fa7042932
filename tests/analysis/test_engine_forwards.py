"""Engine forward annotations -> chunk rows (pipelines/analysis/chunks/engine_forwards.py).

The names are the engines' own forms (docs/engine_annotation_examples.json: produced by running the
released vLLM 0.34.0 / SGLang 0.5.23 functions on the batches named there); the last test reads the
public TraceLens vLLM / SGLang traces when a developer has the fetched copies."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.analysis.chunks.engine_forwards import parse_forward
from pipelines.analysis.chunks.segment import segment_chunks

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = json.loads((ROOT / "docs" / "engine_annotation_examples.json").read_text())


def _examples() -> list[tuple[str, dict]]:
    return [(engine, e) for engine, rows in EXAMPLES.items() for e in rows]


@pytest.mark.parametrize(("engine", "example"), _examples())
def test_every_engine_form_parses_to_its_batch(engine: str, example: dict) -> None:
    forward = parse_forward(example["name"])
    # the example lists every request of the batch: prefill pieces first, then the decodes
    prefills = len(example["query_tokens"]) - example["decodes"]
    prefill_tokens = sum(example["query_tokens"][:prefills])
    name = example["name"]
    no_counts = name.startswith("execute_new_") or (
        name.startswith("step[MIXED") and "c_sq" not in name
    )
    if not prefill_tokens or no_counts:
        assert forward is None  # decode-only, or a form without prefill token counts
        return
    assert forward is not None and forward.engine == engine
    assert forward.query_tokens == prefill_tokens
    assert forward.prefills == prefills
    assert forward.decodes == example["decodes"]
    if forward.key_tokens is not None:
        assert forward.prefix_tokens == sum(example["context_tokens"][:prefills])


def _slices(rows: list[tuple[str, str, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "run_id": "r",
                "rank": 0,
                "lane": lane,
                "name": name,
                "category": None,
                "start_ns": start,
                "dur_ns": dur,
                "args": None,
            }
            for lane, name, start, dur in rows
        ],
        schema_overrides={"category": pl.String, "args": pl.String},
    )


def test_chunked_prefill_forwards_chain_into_one_request() -> None:
    detailed = "execute_{t}_context_1(sq{t}sk{k}sqsq{q}sqsk{x})_generation_0(sq0sk0sqsq0sqsk0)"
    rows = []
    for i in range(4):  # one request of 8K tokens in 2K chunks, then a fresh one
        rows.append(("host", detailed.format(t=2048, k=2048 * (i + 1), q=1, x=1), i * 100, 90))
        rows.append(("compute", "gemm", i * 100 + 5, 10 + i))
    rows.append(("host", detailed.format(t=2048, k=2048, q=1, x=1), 500, 90))
    rows.append(("compute", "gemm", 505, 9))
    rows.append(("host", "step[DECODE bs=32]", 700, 50))  # no prefill: no chunk
    rows.append(("compute", "gemm", 705, 7))
    chunks, _ = segment_chunks(_slices(rows), "r")
    chain = chunks.filter(pl.col("request_id") == chunks["request_id"][0]).sort("chunk_idx")
    assert chain.select("chunk_idx", "tokens", "prefix_tokens", "busy_ns").rows() == [
        (0, 2048, 0, 10),
        (1, 2048, 2048, 11),
        (2, 2048, 4096, 12),
        (3, 2048, 6144, 13),
    ]
    assert chunks.height == 5 and chunks["request_id"].n_unique() == 2


def test_a_mixed_forward_keeps_its_batch_composition() -> None:
    name = "step[MIXED bs=13 c=1 g=12 c_sq=2048 c_sk=8192 c_sqsq=1 c_sqsk=1 g_sq=12 g_sk=1]"
    chunks, _ = segment_chunks(_slices([("host", name, 0, 100), ("compute", "gemm", 10, 20)]), "r")
    row = chunks.row(0, named=True)
    assert (row["tokens"], row["prefix_tokens"]) == (2048, 6144)
    assert (row["batch_prefills"], row["batch_decodes"]) == (1, 12)


TRACELENS = ROOT / "tests" / "data" / "real_engines" / "tracelens" / "inference"


@pytest.mark.parametrize(
    ("folder", "tokens"),
    [("sglang_prefilldecode", 15360), ("vllm_prefilldecode_piecewise", 8155)],
)
def test_real_engine_traces_yield_tau_points_without_flags(
    tmp_path: Path, folder: str, tokens: int
) -> None:
    files = sorted((TRACELENS / folder).glob("*.json.gz"))
    if not files:
        pytest.skip(f"{TRACELENS / folder}: fetched copies are not committed")
    from pipelines.cli import main

    warehouse = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(files[0]), "--warehouse", warehouse]) == 0
    assert main(["chunks", "--warehouse", warehouse]) == 0
    import duckdb

    con = duckdb.connect(warehouse, read_only=True)
    rows = con.execute("select tokens, busy_ns from chunks").fetchall()
    assert len(rows) == 1 and rows[0][0] == tokens and rows[0][1] > 0


def test_a_batched_forward_is_no_tau_k_point() -> None:
    """Single-piece forwards are τ_k points; a forward that batched decodes is left out of
    int_chunk_tau (its time is the whole batch's)."""
    from pipelines.analysis.tau.tau_points import chunk_tau_of

    detailed = "execute_2048_context_1(sq2048sk{k}sqsq1sqsk1)_generation_0(sq0sk0sqsq0sqsk0)"
    mixed = "step[MIXED bs=13 c=1 g=12 c_sq=2048 c_sk=6144 c_sqsq=1 c_sqsk=1 g_sq=12 g_sk=1]"
    rows = [
        ("host", detailed.format(k=2048), 0, 90),
        ("compute", "gemm", 5, 10),
        ("host", detailed.format(k=4096), 100, 90),
        ("compute", "gemm", 105, 11),
        ("host", mixed, 200, 90),
        ("compute", "gemm", 205, 30),
    ]
    chunks, _ = segment_chunks(_slices(rows), "r")
    assert chunks.height == 3
    runs = pl.DataFrame({"run_id": ["r"], "source": ["kineto"], "content_hash": ["h"]})
    tau = chunk_tau_of(chunks, runs)
    assert sorted(tau.get_column("tau_ns").to_list()) == [10, 11]
