"""The automation sensor, running by default: `tau_fits` (AutomationCondition.eager) is refitted
when a run's chunks change, in `dg dev` without switching anything on. (Dagster's own default
automation sensor starts stopped; a code location that defines one of its own replaces it.)"""

import dagster as dg

refit_when_chunks_change = dg.AutomationConditionSensorDefinition(
    "refit_when_chunks_change",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Evaluates the automation conditions (tau_fits: eager on chunks) every 30 s.",
)
