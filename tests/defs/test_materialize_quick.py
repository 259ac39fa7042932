"""`tracereplay materialize --quick` runs the demo's quick campaign: 9 runs, not 96 (its config
left the extra schedules and the 60-run nightly history on) (issue 35 item 5)."""

from __future__ import annotations

from pipelines.campaign import Campaign
from pipelines.cli.materialize import campaign_config
from pipelines.defs.simulation.assets import CampaignConfig


def test_the_quick_config_is_the_demos_quick_campaign() -> None:
    quick = Campaign().quick()
    made = CampaignConfig(**campaign_config(quick)).campaign()
    assert len(made.runs()) == len(quick.runs()) == 9
    assert [(r.model, r.schedule, r.seq_len) for r in made.runs()] == [
        (r.model, r.schedule, r.seq_len) for r in quick.runs()
    ]
