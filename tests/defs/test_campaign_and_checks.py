"""A small simulated campaign through the whole code location: sim_campaign writes run folders
and registers partitions, each partition is ingested and segmented, tau_fits fits them, and the
verdict checks pass on the defaults and fail when their expectation is turned around."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from pipelines.defs.analysis.assets import chunks, tau_fits
from pipelines.defs.analysis.checks import dense_models_linear, dsa_models_flagged
from pipelines.defs.ingest.assets import canonical_tables, raw_run_files
from pipelines.defs.resources import RawDirResource, StoreResource
from pipelines.defs.simulation.assets import sim_campaign
from pipelines.ingest.folders import folder_state
from tests.defs.conftest import metadata_by_key

CAMPAIGN = {
    "models": ["llama3-8b", "glm-5.2"],
    "schedules": ["cpp"],
    # 8 chunks of 16K: llama3-8b's stages have a/b ~2.3 (VPP keeps ~80 % of a proportional
    # curve's gain: `linear`); at 8K chunks of 64K (a/b ~4, ~62 %) they read `flattened`
    "seq_lens": [131072],
    "chunk_size": 16384,
    "pp": 2,
    "repeats": 2,
    "more_schedules": [],
    "nights": 0,
    "short_prompts": False,  # the demo's glm-5.2 1K-chunk runs (pipelines.campaign.ShortPrompt)
}
# the module fixture simulates, ingests and segments 4 runs: about 10 s on a quiet machine
pytestmark = pytest.mark.slow

N_CHUNKS = CAMPAIGN["seq_lens"][0] // CAMPAIGN["chunk_size"]


class Campaign:
    def __init__(self, root: Path) -> None:
        self.raw = root / "raw"
        self.warehouse = root / "warehouse.duckdb"
        self.instance = dg.DagsterInstance.ephemeral()
        self.resources: dict[str, Any] = {
            "warehouse": StoreResource(path=str(self.warehouse)),
            "raw_dir": RawDirResource(path=str(self.raw), settle_seconds=0),
        }

    def materialize(self, assets, **kwargs) -> dg.ExecuteInProcessResult:
        return dg.materialize(assets, resources=self.resources, instance=self.instance, **kwargs)

    def run_campaign(self) -> dg.ExecuteInProcessResult:
        return self.materialize(
            [sim_campaign], run_config={"ops": {"sim_campaign": {"config": CAMPAIGN}}}
        )

    def fit(self) -> tuple[dg.ExecuteInProcessResult, dict[str, dg.AssetCheckEvaluation]]:
        result = self.materialize([tau_fits, dense_models_linear, dsa_models_flagged])
        return result, {e.check_name: e for e in result.get_asset_check_evaluations()}

    def set_attention(self, by_model: dict[str, str | None]) -> None:
        """Rewrite the runs' attention fact (what `--tag attention=...` would store)."""
        con = duckdb.connect(str(self.warehouse))
        try:
            for model, kind in by_model.items():
                con.execute("update runs set attention = ? where model = ?", [kind, model])
        finally:
            con.close()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Campaign:
    state = Campaign(tmp_path_factory.mktemp("campaign"))
    state.first = state.run_campaign()
    state.keys = sorted(state.instance.get_dynamic_partitions("runs"))
    state.chunks = {}
    for key in state.keys:
        result = state.materialize([raw_run_files, canonical_tables, chunks], partition_key=key)
        state.chunks[key] = metadata_by_key(result, "chunks")["chunks"]
    yield state
    state.instance.dispose()


def test_campaign_registers_one_partition_per_run(campaign: Campaign) -> None:
    meta = metadata_by_key(campaign.first, "sim_campaign")["sim_campaign"]
    expected = len(CAMPAIGN["models"]) * CAMPAIGN["repeats"]
    assert meta["runs"] == meta["runs_written"] == meta["partitions_added"] == expected
    assert campaign.keys == sorted(meta["partition_keys"])
    assert sorted(p.name for p in campaign.raw.iterdir()) == campaign.keys  # no staging left
    assert all("-cpp-128k-c16k-r" in k for k in campaign.keys)


def test_rematerialised_campaign_leaves_folders_untouched(campaign: Campaign) -> None:
    before = {k: folder_state(campaign.raw / k).signature for k in campaign.keys}
    again = metadata_by_key(campaign.run_campaign(), "sim_campaign")["sim_campaign"]
    assert again["runs_written"] == again["runs_replaced"] == again["partitions_added"] == 0
    assert {k: folder_state(campaign.raw / k).signature for k in campaign.keys} == before


def test_every_simulated_run_is_segmented(campaign: Campaign) -> None:
    for key, meta in campaign.chunks.items():
        # one chunk per (chunk index, pipeline stage), all marked, none left unassigned
        assert meta["dagster/row_count"] == N_CHUNKS * CAMPAIGN["pp"], key
        assert meta["runs_without_markers"] == 0
    con = duckdb.connect(str(campaign.warehouse), read_only=True)
    try:
        per_run = con.execute("select count(*) from chunks group by run_id").fetchall()
        sources = con.execute("select distinct model from runs order by 1").fetchall()
    finally:
        con.close()
    assert sorted(n for (n,) in per_run) == [N_CHUNKS * CAMPAIGN["pp"]] * len(campaign.keys)
    assert [m for (m,) in sources] == sorted(CAMPAIGN["models"])


def test_fits_and_checks_pass_on_the_defaults(campaign: Campaign) -> None:
    result, checks = campaign.fit()
    meta = metadata_by_key(result, "tau_fits")["tau_fits"]
    assert meta["dagster/row_count"] == len(CAMPAIGN["models"]) * CAMPAIGN["pp"]
    assert "| llama3-8b | cpp |" in meta["fits"] and "| glm-5.2 | cpp |" in meta["fits"]
    # llama: 8 chunks x 2 repeats; a stage may be too_noisy (inconclusive), never flagged
    assert meta["verdicts"].get("linear", 0) >= 1
    dense, dsa = checks["dense_models_linear"], checks["dsa_models_flagged"]
    assert dense.passed and dense.metadata["curves_checked"].value == CAMPAIGN["pp"]
    assert dense.metadata["curves_offending"].value == 0
    assert dsa.passed and dsa.metadata["curves_checked"].value == CAMPAIGN["pp"]
    assert dsa.severity == dg.AssetCheckSeverity.WARN


def test_checks_fail_when_the_expectation_is_wrong(campaign: Campaign) -> None:
    # GLM declared dense: its collapsed slope is flagged, the error check fails;
    # Llama declared sparse: its curves are plainly linear, the warning check fails
    campaign.set_attention({"glm-5.2": "dense", "llama3-8b": "sparse"})
    try:
        result, checks = campaign.fit()
    finally:
        campaign.set_attention({"glm-5.2": "sparse", "llama3-8b": "dense"})
    assert result.success  # non-blocking checks: the run still succeeds
    dense, dsa = checks["dense_models_linear"], checks["dsa_models_flagged"]
    assert not dense.passed and dense.severity == dg.AssetCheckSeverity.ERROR
    assert dense.metadata["curves_offending"].value >= 1
    assert "glm-5.2" in dense.metadata["offending"].value
    assert not dsa.passed and dsa.severity == dg.AssetCheckSeverity.WARN
    assert dsa.metadata["curves_offending"].value >= 1


def test_checks_without_an_attention_fact_pass_and_say_so(campaign: Campaign) -> None:
    campaign.set_attention({"glm-5.2": None, "llama3-8b": None})
    try:
        _, checks = campaign.fit()
    finally:
        campaign.set_attention({"glm-5.2": "sparse", "llama3-8b": "dense"})
    dense = checks["dense_models_linear"]
    assert dense.passed and dense.metadata["curves_checked"].value == 0
    assert "nothing to check" in dense.description
