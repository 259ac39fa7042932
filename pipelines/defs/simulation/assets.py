"""A campaign of simulated runs, written as torch_npu text exports into the raw folder.

Each run (model x schedule x sequence length x repeat, lognormal run-to-run noise) becomes one
run folder `<name>-<model>-<schedule>-s<seq_len>-c<chunk>-r<repeat>/` holding one
`*_ascend_pt` folder per rank (pipelines.sim.writers_ascend), and is registered as a partition
of `runs`: simulated runs then go through discovery, ingestion and segmentation exactly like real
ones (the sensor, or a backfill of the new partitions, loads them). Writing through the raw folder
rather than straight into the warehouse keeps one ingestion path, so the readers are exercised
on every simulated run too.

Every run is written to a hidden sibling first and moved into place only when its bytes differ
from what is there: the sensor never sees a half-written folder, and re-materialising an
unchanged campaign leaves the folders, their signatures and the warehouse untouched. Seeds are
derived from (seed, model, schedule, seq_len, repeat), so adding a model does not change the
other runs.
"""

import filecmp
import hashlib
import json
import shutil
from pathlib import Path

import dagster as dg

from pipelines.defs.ingest.partitions import runs_partitions
from pipelines.defs.metadata import markdown_rows
from pipelines.defs.resources import RawDirResource
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt

SIMULATOR_MARK = "tracereplay"  # profiler_metadata.json "simulator" of folders we may replace


class CampaignConfig(dg.Config):
    """The grid of simulated runs. Defaults: 4 models x 2 schedules x 2 lengths x 2 repeats."""

    name: str = "sim"
    models: list[str] = ["qwen3-coder-30b-a3b", "deepseek-v3.1", "glm-5.2", "llama3-8b"]  # noqa: RUF012 (pydantic copies defaults)
    schedules: list[str] = ["cpp", "vpp"]  # noqa: RUF012 (pydantic copies defaults)
    seq_lens: list[int] = [65536, 131072]  # noqa: RUF012 (pydantic copies defaults)
    chunk_size: int = 8192
    pp: int = 2
    repeats: int = 2
    noise: float = 0.03
    seed: int = 0


def run_key(config: CampaignConfig, model: str, schedule: str, seq_len: int, repeat: int) -> str:
    """Folder name (= partition key) of one simulated run."""
    return f"{config.name}-{model}-{schedule}-s{seq_len}-c{config.chunk_size}-r{repeat}"


def run_seed(config: CampaignConfig, model: str, schedule: str, seq_len: int, repeat: int) -> int:
    """A seed that depends only on the run's own coordinates."""
    text = f"{config.seed}/{model}/{schedule}/{seq_len}/{config.chunk_size}/{repeat}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def same_tree(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes."""
    names = _files(a)
    if names != _files(b):
        return False
    return all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def written_by_simulator(folder: Path) -> bool:
    """Whether every profiler_metadata.json under `folder` names this simulator."""
    found = list(folder.rglob("profiler_metadata.json"))
    for path in found:
        try:
            if json.loads(path.read_text()).get("simulator") != SIMULATOR_MARK:
                return False
        except (OSError, ValueError):
            return False
    return bool(found)


def publish(staged: Path, final: Path) -> str:
    """Move a staged run folder into place: 'written', 'replaced' or 'unchanged'."""
    if not final.exists():
        staged.rename(final)
        return "written"
    if same_tree(staged, final):
        shutil.rmtree(staged)
        return "unchanged"
    if not written_by_simulator(final):
        shutil.rmtree(staged)
        raise dg.Failure(f"{final} exists and was not written by the simulator: not replacing it")
    old = final.with_name(f".old-{final.name}")
    shutil.rmtree(old, ignore_errors=True)
    final.rename(old)
    staged.rename(final)
    shutil.rmtree(old)
    return "replaced"


@dg.asset(
    group_name="simulation",
    kinds={"python"},
    description="Simulated runs written as Ascend text exports into the raw folder, one "
    "partition of `runs` each.",
)
def sim_campaign(
    context: dg.AssetExecutionContext, config: CampaignConfig, raw_dir: RawDirResource
) -> dg.MaterializeResult:
    root = raw_dir.root
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for model in config.models:
        for schedule in config.schedules:
            for seq_len in config.seq_lens:
                for repeat in range(config.repeats):
                    key = run_key(config, model, schedule, seq_len, repeat)
                    seed = run_seed(config, model, schedule, seq_len, repeat)
                    result = simulate(
                        [seq_len],
                        schedule,
                        model=model,
                        chunk_size=config.chunk_size,
                        pp=config.pp,
                        noise=config.noise,
                        seed=seed,
                    )
                    staged = root / f".staging-{key}"
                    shutil.rmtree(staged, ignore_errors=True)
                    write_ascend_pt(result, staged)
                    status = publish(staged, root / key)
                    summary = summarize(result)
                    rows.append(
                        (
                            key,
                            model,
                            schedule,
                            seq_len,
                            repeat,
                            seed,
                            summary["makespan_ns"] / 1e6,
                            summary["bubble_ratio"],
                            status,
                        )
                    )
    keys = [row[0] for row in rows]
    known = set(context.instance.get_dynamic_partitions(runs_partitions.name))
    new = [key for key in keys if key not in known]
    if new:
        context.instance.add_dynamic_partitions(runs_partitions.name, new)
    statuses = {s: sum(1 for row in rows if row[-1] == s) for s in ("written", "replaced")}
    context.log.info(
        f"{len(rows)} simulated runs in {root}: {statuses['written']} new, "
        f"{statuses['replaced']} rewritten, {len(new)} partitions added"
    )
    return dg.MaterializeResult(
        metadata={
            "raw_dir": dg.MetadataValue.path(str(root)),
            "runs": len(rows),
            "runs_written": statuses["written"],
            "runs_replaced": statuses["replaced"],
            "partitions_added": len(new),
            "partition_keys": dg.MetadataValue.json(keys),
            "table": dg.MetadataValue.md(
                markdown_rows(
                    [
                        "partition",
                        "model",
                        "schedule",
                        "seq_len",
                        "repeat",
                        "seed",
                        "makespan_ms",
                        "bubble_ratio",
                        "status",
                    ],
                    rows,
                )
            ),
        }
    )
