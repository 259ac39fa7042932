"""The simulated campaign as an asset: pipelines.campaign.write_campaign into the raw folder.

The grid, folder names, seeds and publishing are the library's (the same as `tracereplay demo`,
so the same configuration writes the same bytes); this asset registers each run folder as a
partition of `runs`. Simulated runs then go through discovery, ingestion and segmentation exactly
like real ones (the sensor, or `tracereplay materialize`).
"""

from dataclasses import fields, replace

import dagster as dg

from pipelines.campaign import Campaign, write_campaign
from pipelines.defs.ingest.partitions import runs_partitions
from pipelines.defs.metadata import markdown_rows
from pipelines.defs.resources import RawDirResource
from pipelines.publish import NotOurFolder

_DEFAULTS = Campaign()


class CampaignConfig(dg.Config):
    """The grid of simulated runs (defaults: pipelines.campaign.Campaign, the demo's campaign)."""

    models: list[str] = list(_DEFAULTS.models)  # noqa: RUF012 (pydantic copies defaults)
    schedules: list[str] = list(_DEFAULTS.schedules)  # noqa: RUF012
    seq_lens: list[int] = list(_DEFAULTS.seq_lens)  # noqa: RUF012
    more_schedules: list[str] = list(_DEFAULTS.more_schedules)  # noqa: RUF012
    chunk_size: int = _DEFAULTS.chunk_size
    pp: int = _DEFAULTS.pp
    repeats: int = _DEFAULTS.repeats
    noise: float = _DEFAULTS.noise
    seed: int = _DEFAULTS.seed
    nights: int = _DEFAULTS.history.nights  # nightly history (pipelines.nightly_history); 0: none
    short_prompts: bool = True  # the top-k bend runs (pipelines.campaign.ShortPrompt)

    def campaign(self) -> Campaign:
        own = {f.name for f in fields(Campaign)} - {"history", "short"}
        values = {name: getattr(self, name) for name in own}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        return Campaign(
            **values,
            history=replace(_DEFAULTS.history, nights=self.nights),
            short=_DEFAULTS.short if self.short_prompts else None,
        )


@dg.asset(
    group_name="simulation",
    kinds={"python"},
    description="Simulated runs written as Ascend text exports into the raw folder, one "
    "partition of `runs` each (the demo's campaign).",
)
def sim_campaign(
    context: dg.AssetExecutionContext, config: CampaignConfig, raw_dir: RawDirResource
) -> dg.MaterializeResult:
    try:
        published = write_campaign(config.campaign(), raw_dir.root, context.log.info)
    except NotOurFolder as error:
        raise dg.Failure(str(error)) from error
    keys = [run.folder.name for run in published]
    known = set(context.instance.get_dynamic_partitions(runs_partitions.name))
    new = [key for key in keys if key not in known]
    if new:
        context.instance.add_dynamic_partitions(runs_partitions.name, new)
    statuses = {s: sum(run.status == s for run in published) for s in ("written", "replaced")}
    context.log.info(
        f"{len(published)} simulated runs in {raw_dir.root}: {statuses['written']} new, "
        f"{statuses['replaced']} rewritten, {len(new)} partitions added"
    )
    rows = [run.row() for run in published]
    return dg.MaterializeResult(
        metadata={
            "raw_dir": dg.MetadataValue.path(str(raw_dir.root)),
            "runs": len(published),
            "runs_written": statuses["written"],
            "runs_replaced": statuses["replaced"],
            "partitions_added": len(new),
            "partition_keys": dg.MetadataValue.json(keys),
            "table": dg.MetadataValue.md(
                markdown_rows(list(rows[0]) if rows else [], [r.values() for r in rows])
            ),
        }
    )
