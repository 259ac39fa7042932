"""A snapshot of the asset graph (after dagster-open-platform's test_defs.py): every asset key
with its deps, group, kinds, partitions, pool and automation condition, the checks per asset and
the sensors with their default status. A change to any of them fails here until the snapshot is
rewritten on purpose:

    TRACEREPLAY_UPDATE_SNAPSHOT=1 uv run pytest tests/defs/test_asset_graph_snapshot.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dagster as dg

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_graph.json"


def graph_snapshot(defs: dg.Definitions) -> dict[str, Any]:
    """The parts of the asset graph a reader of the lineage would notice change."""
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        partitions = node.partitions_def
        condition = node.automation_condition
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "group": node.group_name,
            "kinds": sorted(node.kinds),
            "partitions": None
            if partitions is None
            else f"{type(partitions).__name__}:{getattr(partitions, 'name', '')}",
            "pools": sorted(node.pools or ()),
            "automation": None if condition is None else condition.get_label() or str(condition),
            "checks": sorted(k.name for k in node.check_keys),
        }
    sensors = {
        s.name: {
            "type": type(s).__name__,
            "default_status": s.default_status.value,
            "targets": sorted(k.to_user_string() for k in s.asset_selection.resolve(graph))
            if s.asset_selection is not None
            else [],
        }
        for s in sorted(repo.sensor_defs, key=lambda s: s.name)
    }
    return {"assets": assets, "sensors": sensors}


def test_asset_graph_matches_the_snapshot() -> None:
    from pipelines.definitions import defs

    current = graph_snapshot(defs())
    if os.environ.get("TRACEREPLAY_UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    changed = [
        f"{part} {name}: {expected[part].get(name)} -> {current[part].get(name)}"
        for part in ("assets", "sensors")
        for name in sorted(set(expected[part]) | set(current[part]))
        if expected[part].get(name) != current[part].get(name)
    ]
    assert not changed, "asset graph differs from the snapshot:\n" + "\n".join(changed)
