"""Curves of known shape, written as torch_npu profiler folders, through the command line.

Not the presets: a cost model of our own per shape (dense straight, DSA-like slope collapse,
concave, convex, flat), three noisy runs of 16 chunks each on two pipeline ranks, written in the
torch_npu layout (pipelines.sim.writers_ascend), then `tracereplay ingest` (tagged with the
attention kind as a user would), `tracereplay fit --json`: every stage curve gets the verdict its
shape calls for, and the verdict policy holds (dense linear, sparse flagged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from pipelines.cli import main
from pipelines.sim.outputs import write_outputs
from pipelines.sim.run import simulate

CHUNK = 16384
N_CHUNKS = 16
MS = 1e6


@dataclass(frozen=True)
class KnownCurve:
    """Full-model latency of chunk k (prefix k x CHUNK) in ms, split over the layers evenly."""

    name: str
    num_layers: int = 60
    call_overhead_ns: float = 0.0

    def full_ms(self, k: np.ndarray) -> np.ndarray:
        if self.name == "dense":  # causal attention: affine in k, a/b 2 (the dense presets'
            return 120 + 60 * k  # stages at 16K chunks: 1.5-2.1; a/b 6.7 is `flattened` at N = 16)
        if self.name == "dsa":  # the slope collapses to a tenth from chunk 4 on
            return 400 + 60 * np.minimum(k, 4) + 6 * np.maximum(k - 4, 0)
        if self.name == "concave":
            return 400 + 60 * k - 1.6 * k**2
        if self.name == "convex":
            return 400 + 20 * k + 2.0 * k**2
        return 500 + 0 * k  # flat: no prefix-dependent work

    def stage_ns(self, tokens, prefix, layer_lo, layer_hi) -> np.ndarray:
        k = np.asarray(prefix, dtype=float) / CHUNK
        share = (np.asarray(layer_hi) - np.asarray(layer_lo)) / self.num_layers
        return self.full_ms(k) * MS * np.asarray(tokens, dtype=float) / CHUNK * share


# the verdict each shape calls for; the attention tag the policy judges it by
EXPECTED = {
    "dense": ("linear", "dense"),
    "dsa": ("knee", "sparse"),
    "concave": ("concave", None),
    "convex": ("convex", None),
    "flat": ("flattened", None),
}


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("known")
    warehouse = str(root / "w.duckdb")
    for name, (_, attention) in EXPECTED.items():
        raw = root / "raw" / name
        for seed in range(3):
            run = simulate(
                N_CHUNKS * CHUNK,
                "cpp",
                model=KnownCurve(name),
                chunk_size=CHUNK,
                comm=None,
                collectives=None,
                noise=0.03,
                seed=seed,
            )
            write_outputs(run, raw / f"run-{seed}", ["ascend"])
        tags = ["--tag", f"attention={attention}"] if attention else []
        argv = ["ingest", str(raw), "--warehouse", warehouse, "--no-progress", *tags]
        assert main(argv) == 0
    assert main(["fit", "--warehouse", warehouse, "--json"]) == 0
    return {"warehouse": warehouse}


def test_every_stage_curve_gets_the_verdict_of_its_shape(fitted, capsys) -> None:
    assert main(["fit", "--warehouse", fitted["warehouse"], "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    curves = report["curves"]
    assert len(curves) == 2 * len(EXPECTED)  # two pipeline ranks per shape
    for curve in curves:
        assert (curve["n_runs"], curve["n_k"]) == (3, N_CHUNKS)
        assert curve["verdict"] == EXPECTED[curve["model"]][0], curve["evidence"]
    dense = [c for c in curves if c["model"] == "dense"]
    for curve in dense:  # per stage: half the full model's 60 ms/chunk
        assert curve["slope_lo"] <= 30 * MS <= curve["slope_hi"], curve["ci_method"]
    for curve in (c for c in curves if c["model"] == "dsa"):
        assert curve["breakpoint_k"] == pytest.approx(4, abs=1)


def test_the_verdict_policy_passes_on_the_tagged_runs(fitted, capsys) -> None:
    """dense curves linear, DSA-like ones flagged: the expectations `tracereplay fit` checks."""
    assert main(["fit", "--warehouse", fitted["warehouse"]]) == 0
    out = capsys.readouterr().out
    assert "ok   dense_models_linear: dense attention, expected linear: 0 of 2 curves" in out
    assert "ok   dsa_models_flagged: sparse attention, expected flagged (not linear): 0 of 2" in out
