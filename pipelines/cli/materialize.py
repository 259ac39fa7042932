"""`tracereplay materialize [--quick]`: materialise every Dagster asset in one command, in
dependency order.

`sim_campaign` writes the campaign and registers its partitions, then every partition of `runs`
(simulated and real run folders alike) is ingested and segmented, then `tau_fits` is fitted and its
checks evaluated. `dagster asset materialize --select '*'` cannot do this: one run cannot hold
both the unpartitioned and the dynamically partitioned assets. Runs are recorded in the instance
of $DAGSTER_HOME (an ephemeral one when it is unset), so they show up in `dg dev`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pipelines.cli import ExitCode

if TYPE_CHECKING:
    import dagster as dg

    from pipelines.campaign import Campaign


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "materialize",
        help="materialise every Dagster asset once (campaign, ingest, chunks, fits, checks)",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="the demo's --quick campaign")
    parser.set_defaults(func=run)


def materialize_all(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    campaign: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> dg.ExecuteInProcessResult:
    """Run sim_campaign (config `campaign`), every partition's ingest and chunks, then tau_fits
    and its checks; raises when a step fails. Returns the last (fit) result."""
    import dagster as dg

    from pipelines.defs.analysis.assets import chunks, tau_fits
    from pipelines.defs.analysis.checks import dense_models_linear, dsa_models_flagged
    from pipelines.defs.ingest.assets import canonical_tables, raw_run_files
    from pipelines.defs.ingest.partitions import runs_partitions
    from pipelines.defs.simulation.assets import sim_campaign

    per_run = (raw_run_files, canonical_tables, chunks)
    fit = (tau_fits, dense_models_linear, dsa_models_flagged)

    def run(assets, **kwargs) -> dg.ExecuteInProcessResult:
        return dg.materialize(assets, instance=instance, resources=resources, **kwargs)

    run([sim_campaign], run_config={"ops": {"sim_campaign": {"config": campaign or {}}}})
    keys = sorted(instance.get_dynamic_partitions(runs_partitions.name))
    for i, key in enumerate(keys, start=1):
        run(per_run, partition_key=key)
        log(f"ingested and segmented {i}/{len(keys)}: {key}")
    result = run(fit)
    for check in result.get_asset_check_evaluations():
        log(f"check {check.check_name}: {'passed' if check.passed else 'FAILED'}")
    return result


def campaign_config(campaign: Campaign) -> dict[str, Any]:
    """sim_campaign's run config for `campaign`: every field its config has (the demo's --quick
    campaign is its 9 runs only when the extra schedules and the nightly history are off too;
    without them it made 96)."""
    return {
        "models": list(campaign.models),
        "schedules": list(campaign.schedules),
        "seq_lens": list(campaign.seq_lens),
        "more_schedules": list(campaign.more_schedules),
        "nights": campaign.history.nights,
        "short_prompts": campaign.short is not None,
    }


def run(args: argparse.Namespace) -> int:
    import dagster as dg

    from pipelines.campaign import Campaign
    from pipelines.definitions import defs

    campaign = campaign_config(Campaign().quick()) if args.quick else {}
    instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None
    with instance or dg.DagsterInstance.ephemeral() as inst:
        result = materialize_all(inst, dict(defs().resources), campaign)
    checks = result.get_asset_check_evaluations()
    return ExitCode.OK if checks and all(c.passed for c in checks) else ExitCode.CHECK_FAILED
