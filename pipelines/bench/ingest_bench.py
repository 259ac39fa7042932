"""The ingest benchmark: one large trace_view.json made of real events, parsed by our ingest and
by baselines, each in its own process; rates, peak RSS and the targets they are held to.

Paths (all on the same file, or for HTA on its Kineto conversion):
  ours_cli  `tracereplay ingest RANK_DIR` into a fresh warehouse, the command users run (chunk
            segmentation, sanity warnings, the CLI's imports); its wall is the whole child
            process, interpreter start included
  ours      ingest_paths([rank folder]) into a fresh warehouse (discovery, hashing, all readers,
            derived tables, warehouse write), imports excluded; ours_streamed the same forced
            onto the bounded-memory path
  duckdb_mem  DuckDB read_json(format='array', explicit columns) into a table of an in-memory
            database, default threads: the honest baseline (docs/stack.md §6)
  duckdb    the same into a DuckDB file; duckdb_1t the same on one thread
  floor     DuckDB's read of the complete events into a DuckDB file with the file's sha256 on a
            thread beside it: with its interpreter start, the CPU any ingest that stores the
            events and hashes the file spends; over this machine's cores, the least wall time
            such an ingest can take (`floor_of`), reported beside the targets
  msgspec   typed msgspec decode, args left raw (no table)
  orjson    orjson.loads (no table; only when orjson is installed)
  hta       Holistic Trace Analysis TraceAnalysis(trace_dir) on the Kineto form (separate venv)

Every round measures the paths one after the other (A B A B: interleaved, so a load change on a
shared machine hits both), and the ours_cli / duckdb_mem wall ratio is taken within each round.

Targets (issue 37): ours_cli wall / duckdb_mem wall <= 1 (goal 0.5), ours_cli peak RSS <= the
ingest budget (2 GiB default), ours_cli MB/s >= 10x HTA's. Older targets (ours vs the DuckDB
file paths, streamed vs in memory) are computed when their paths are measured.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.bench.generate import (
    MB,
    SOURCE_RANK_DIR,
    GeneratedTrace,
    KinetoTrace,
    generate_rank,
    to_kineto,
)
from pipelines.bench.harness import Measurement, measure, median_of
from pipelines.machine import usable_cores
from pipelines.memory_budget import DEFAULT_MAX_MEMORY, ENV_MAX_MEMORY, ENV_SPILL_DIR

HTA_PYTHON_ENV = "TRACEREPLAY_HTA_PYTHON"
HTA_PROBE = Path(__file__).with_name("hta_probe.py")
HTA_EXPECTED_MB_S = 7.5  # docs/stack.md §7: HTA parses about 7-8 MB/s of JSON (measured)
HTA_BUDGET_S = 180.0  # parse HTA a leading slice when the whole file would take longer
PROBE_TIMEOUT_S = 1800.0
DUCKDB_PATHS = ("duckdb", "duckdb_1t")  # into a file: default threads, one thread
OURS_PATHS = ("ours_cli", "ours", "ours_streamed")
ALL_PATHS = (*OURS_PATHS, "duckdb_mem", *DUCKDB_PATHS, "floor", "msgspec", "orjson", "hta")
# what issue 37's acceptance compares, and the floor that puts its first ratio in scale
DEFAULT_PATHS = ("ours_cli", "duckdb_mem", "floor", "hta")
WALL_RATIO_BOUND = 1.0  # ours_cli wall / duckdb_mem wall (issue 37: <= 1.0)
WALL_RATIO_GOAL = 0.5
# Shapes of the generated trace, as (flow ids, chunk markers): the export's flow/connection ids
# shifted per copy (the project generator), or kept in every copy (one id then binds an event of
# every copy: issue 36's hostile shape, paired in time order by pipelines/ingest/steps/flows.py);
# with markers, one chunk marker per copy, so `tracereplay ingest` segments the run (issue 37
# item 1), in both id shapes (issue 36 item 6: the default ingest, segmentation included, under
# the budget on traces of real export events with ids renumbered per copy, and repeated).
SHAPES = {
    "generator": ("renumbered", False),
    "repeated-ids": ("repeated", False),
    "markers": ("renumbered", True),
    "markers-repeated-ids": ("repeated", True),
}


@dataclass
class Target:
    """A ratio and the bound it must meet."""

    name: str
    description: str
    value: float | None
    bound: float
    at_least: bool  # True: value >= bound; False: value <= bound

    @property
    def status(self) -> str:
        if self.value is None:
            return "n/a"
        met = self.value >= self.bound if self.at_least else self.value <= self.bound
        return "met" if met else "not met"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "value": self.value,
            "target": f"{'>=' if self.at_least else '<='} {self.bound:g}",
            "status": self.status,
        }


def cpu_ratios(measurements: list[Measurement]) -> dict[str, float | None]:
    """The rate ratios on CPU time instead of wall time (less sensitive to a shared machine's
    load; informational, the targets use wall time)."""
    rates = {m.path: m.mb_per_cpu_s for m in measurements}
    ours = rates.get("ours_cli") or rates.get("ours")
    duckdb = rates.get("duckdb_mem") or _fastest_duckdb(rates)
    return {
        "ours_vs_duckdb_cpu": _ratio(ours, duckdb),
        "ours_vs_hta_cpu": _ratio(ours, rates.get("hta")),
    }


@dataclass
class IngestBenchReport:
    """Everything one benchmark run measured."""

    trace: dict[str, Any]
    measurements: list[Measurement]
    targets: list[Target]
    setup: dict[str, Any] = field(default_factory=dict)
    load: dict[str, Any] = field(default_factory=dict)

    def by_path(self, path: str) -> Measurement | None:
        return next((m for m in self.measurements if m.path == path), None)

    @property
    def all_met(self) -> bool:
        return all(t.status != "not met" for t in self.targets)

    def as_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "setup": self.setup,
            "load": self.load,
            "measurements": [m.as_json() for m in self.measurements],
            "targets": [t.as_json() for t in self.targets],
            "cpu_ratios": cpu_ratios(self.measurements),
            "floor": floor_of(self.measurements, self.setup.get("cores")),
        }


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _fastest_duckdb(rates: dict[str, float | None]) -> float | None:
    known = [rate for path, rate in rates.items() if path in DUCKDB_PATHS and rate]
    return max(known) if known else None


def floor_of(measurements: list[Measurement], cpus: int | None = None) -> dict[str, Any] | None:
    """The least wall time of an ingest that stores the complete events in a DuckDB file, hashes
    the file and starts a Python interpreter, on this machine: the `floor` path's CPU (DuckDB's
    parse and write, the sha256) and its start-up CPU, spread perfectly over the cores; as a
    ratio to DuckDB's in-memory read (the first target's baseline) and ours_cli's wall to it.
    Work the product does beyond that (lanes, flows, steps, launch attribution, checks) can
    only add to it. None without a measured floor."""
    by_path = {m.path: m for m in measurements if m.ok}
    floor = by_path.get("floor")
    if floor is None or floor.cpu_s is None:
        return None
    cpus = cpus or usable_cores()
    cpu = floor.cpu_s + float(floor.extra.get("startup_cpu_s") or 0.0)
    wall = cpu / cpus
    out: dict[str, Any] = {"cpu_s": cpu, "cores": cpus, "wall_s": wall}
    baseline = by_path.get("duckdb_mem")
    out["vs_duckdb_mem"] = _ratio(wall, baseline.wall_s if baseline else None)
    ours = by_path.get("ours_cli")
    out["ours_cli_vs_floor"] = _ratio(ours.wall_s if ours else None, wall)
    return out


def paired_wall_ratio(rounds: list[dict[str, Measurement]]) -> float | None:
    """Median over the rounds of ours_cli wall / duckdb_mem wall, each ratio within one round
    (both measured back to back, so both saw about the same load)."""
    ratios = sorted(
        r["ours_cli"].wall_s / r["duckdb_mem"].wall_s
        for r in rounds
        if "ours_cli" in r
        and "duckdb_mem" in r
        and r["ours_cli"].ok
        and r["duckdb_mem"].ok
        and r["ours_cli"].wall_s
        and r["duckdb_mem"].wall_s
    )
    if not ratios:
        return None
    middle = len(ratios) // 2
    return ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2


def targets_of(
    measurements: list[Measurement],
    file_mb: float,
    max_memory: int = DEFAULT_MAX_MEMORY,
    wall_ratio: float | None = None,
) -> list[Target]:
    """The targets of the measured paths (a target whose paths were not measured is left out; one
    whose path failed or was skipped is n/a). wall_ratio: the paired ours_cli / duckdb_mem
    ratio of `paired_wall_ratio` (else the ratio of the two reported walls). The DuckDB file
    rate is that of the faster DuckDB file path (default threads or one thread)."""
    by_path = {m.path: m for m in measurements}
    rates = {m.path: m.mb_per_s for m in measurements}

    def rss(path: str) -> float | None:
        m = by_path.get(path)
        return m.peak_rss_mb if m is not None and m.ok else None

    def wall(path: str) -> float | None:
        m = by_path.get(path)
        return m.wall_s if m is not None and m.ok else None

    budget_mb = max_memory / MB
    targets = []
    if "ours_cli" in by_path:
        if "duckdb_mem" in by_path:
            value = wall_ratio
            if value is None:
                value = _ratio(wall("ours_cli"), wall("duckdb_mem"))
            targets.append(
                Target(
                    "cli_vs_duckdb_mem_wall",
                    f"ours wall / DuckDB in-memory wall (goal {WALL_RATIO_GOAL:g})",
                    value,
                    WALL_RATIO_BOUND,
                    at_least=False,
                )
            )
        targets.append(
            Target(
                "cli_rss_vs_budget",
                f"ours peak RSS / budget ({budget_mb:,.0f} MB)",
                _ratio(rss("ours_cli"), budget_mb),
                1.0,
                at_least=False,
            )
        )
        if "hta" in by_path:
            targets.append(
                Target(
                    "cli_vs_hta_rate",
                    "ours MB/s / HTA MB/s",
                    _ratio(rates.get("ours_cli"), rates.get("hta")),
                    10.0,
                    at_least=True,
                )
            )
    if "ours_streamed" in by_path:
        if "ours" in by_path:
            targets.append(
                Target(
                    "streamed_vs_in_memory_rate",
                    "streamed MB/s / in-memory MB/s",
                    _ratio(rates.get("ours_streamed"), rates.get("ours")),
                    0.8,
                    at_least=True,
                )
            )
        targets.append(
            Target(
                "streamed_rss_vs_budget",
                f"streamed peak RSS / budget ({budget_mb:,.0f} MB)",
                _ratio(rss("ours_streamed"), budget_mb),
                1.0,
                at_least=False,
            )
        )
    if "ours" in by_path:
        if any(p in by_path for p in DUCKDB_PATHS):
            targets.append(
                Target(
                    "ours_vs_duckdb_rate",
                    "ingest_paths MB/s / DuckDB-to-file MB/s",
                    _ratio(rates.get("ours"), _fastest_duckdb(rates)),
                    0.5,
                    at_least=True,
                )
            )
        if "hta" in by_path and "ours_cli" not in by_path:
            targets.append(
                Target(
                    "ours_vs_hta_rate",
                    "ingest_paths MB/s / HTA MB/s",
                    _ratio(rates.get("ours"), rates.get("hta")),
                    10.0,
                    at_least=True,
                )
            )
        targets.append(
            Target(
                "rss_vs_file",
                "ingest_paths peak RSS / trace file size",
                _ratio(rss("ours"), file_mb),
                2.0,
                at_least=False,
            )
        )
    return targets


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def find_hta_python(explicit: str | None) -> str | None:
    """--hta-python, else $TRACEREPLAY_HTA_PYTHON; None when neither names an executable."""
    candidate = explicit or os.environ.get(HTA_PYTHON_ENV)
    if not candidate:
        return None
    path = shutil.which(candidate) or (candidate if os.access(candidate, os.X_OK) else None)
    return path


def _hta_importable(python: str) -> bool:
    try:
        done = subprocess.run(
            [python, "-c", "import hta.trace_analysis"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def hta_slice_mb(file_mb: float, requested: float | None) -> float | None:
    """MB of events to convert for HTA: the request, else all of it (None) unless HTA would need
    more than HTA_BUDGET_S at its expected rate."""
    if requested is not None:
        return requested if requested < file_mb else None
    budget = HTA_BUDGET_S * HTA_EXPECTED_MB_S
    return budget if file_mb > budget else None


def _probe_command(kind: str, *args: Path) -> list[str]:
    return [sys.executable, "-m", "pipelines.bench.ingest_children", kind, *map(str, args)]


def run_ingest_bench(
    size_mb: float = 500.0,
    workdir: Path | None = None,
    keep: bool = False,
    skip_hta: bool = False,
    hta_python: str | None = None,
    hta_mb: float | None = None,
    source_rank_dir: Path = SOURCE_RANK_DIR,
    repeat: int = 1,
    log: Callable[[str], None] | None = None,
    max_memory: int = DEFAULT_MAX_MEMORY,
    paths: tuple[str, ...] = DEFAULT_PATHS,
    flow_ids: str = "renumbered",
    markers: bool = False,
) -> IngestBenchReport:
    """Generate the trace, measure every path (all but HTA in `repeat` interleaved rounds,
    reporting the run with the median wall time), compute the targets; cleans up unless keep.
    flow_ids: 'renumbered' (shifted per copy) or 'repeated' (every copy keeps the source's
    ids); markers: one chunk marker per copy (the run is segmented at ingest)."""
    say = log or (lambda _msg: None)
    created = workdir is None
    root = Path(tempfile.mkdtemp(prefix="tracereplay-bench-")) if workdir is None else workdir
    root.mkdir(parents=True, exist_ok=True)
    owned = [root / "run", root / "kineto", root / "duckdb.duckdb"]
    owned += [root / f"{kind}.duckdb" for kind in OURS_PATHS] + [root / "spill"]
    for path in owned:
        _remove(path)
    try:
        return _run(
            root,
            size_mb,
            skip_hta,
            hta_python,
            hta_mb,
            source_rank_dir,
            repeat,
            say,
            max_memory,
            paths,
            flow_ids,
            markers,
        )
    finally:
        if not keep:
            if created:
                shutil.rmtree(root, ignore_errors=True)
            else:
                for path in owned:
                    _remove(path)
                    _remove(path.with_name(path.name + ".wal"))


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()


def _run(
    root: Path,
    size_mb: float,
    skip_hta: bool,
    hta_python: str | None,
    hta_mb: float | None,
    source_rank_dir: Path,
    repeat: int,
    say: Callable[[str], None],
    max_memory: int = DEFAULT_MAX_MEMORY,
    paths: tuple[str, ...] = DEFAULT_PATHS,
    flow_ids: str = "renumbered",
    markers: bool = False,
) -> IngestBenchReport:
    load = {"load1_start": _load()}
    say(f"generating a {size_mb:g} MB trace_view.json from {source_rank_dir} in {root}")
    start = time.perf_counter()
    trace = generate_rank(
        root, size_mb, source_rank_dir, repeat_ids=flow_ids == "repeated", markers=markers
    )
    setup: dict[str, Any] = {"workdir": str(root), "generate_s": time.perf_counter() - start}
    setup["flow_ids"] = flow_ids
    setup["markers"] = markers
    say(f"  {trace.mb:.1f} MB, {trace.events:,} events, {trace.copies} copies")
    setup["repeat"] = repeat
    setup["max_memory_mb"] = max_memory / MB
    setup["cores"] = usable_cores()
    order = [
        k for k in (*OURS_PATHS, "duckdb_mem", *DUCKDB_PATHS, "floor", "msgspec") if k in paths
    ]
    if "orjson" in paths and importlib.util.find_spec("orjson") is not None:
        order.append("orjson")
    rounds: list[dict[str, Measurement]] = []
    for number in range(repeat):  # A B A B: every path once per round
        say(f"round {number + 1} of {repeat}")
        rounds.append(
            {kind: _measure_kind(kind, trace, root, say, max_memory, markers) for kind in order}
        )
    measurements = [median_of([r[kind] for r in rounds]) for kind in order]
    if "orjson" in paths and "orjson" not in order:
        measurements.append(_skipped("orjson", trace, "skipped: orjson not installed"))
    wall_ratio = paired_wall_ratio(rounds)
    setup["paired_wall_ratios"] = [
        round(r["ours_cli"].wall_s / r["duckdb_mem"].wall_s, 3)
        for r in rounds
        if "ours_cli" in r and "duckdb_mem" in r and r["ours_cli"].ok and r["duckdb_mem"].ok
    ]
    if "hta" in paths:
        measurements.append(_measure_hta(trace, root, skip_hta, hta_python, hta_mb, setup, say))
    load["load1_end"] = _load()
    load["uptime"] = _uptime()
    return IngestBenchReport(
        trace={
            "path": str(trace.trace_path),
            "source": str(source_rank_dir),
            "mb": trace.mb,
            "events": trace.events,
            "complete_events": trace.complete_events,
            "copies": trace.copies,
            "source_events": trace.source_events,
        },
        measurements=measurements,
        targets=targets_of(measurements, trace.mb, max_memory, wall_ratio),
        setup=setup,
        load=load,
    )


def _uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _skipped(path: str, trace: GeneratedTrace, note: str) -> Measurement:
    return Measurement(path=path, mb=trace.mb, events=trace.events, status="skipped", note=note)


def _measure_kind(
    kind: str,
    trace: GeneratedTrace,
    root: Path,
    say: Callable[[str], None],
    max_memory: int,
    markers: bool = False,
) -> Measurement:
    if kind in OURS_PATHS:
        result = _measure_ours(trace, root, say, kind, max_memory)
        chunks = result.extra.get("chunks")
        if markers and kind == "ours_cli" and result.ok and chunks != trace.copies:
            result.note = f"segmented {chunks} chunks, expected {trace.copies}"
            result.status = "failed"
        return result
    out = root / "duckdb.duckdb" if kind in (*DUCKDB_PATHS, "floor") else None
    return _measure_plain(kind, trace, out, say)


def _measure_ours(
    trace: GeneratedTrace,
    root: Path,
    say: Callable[[str], None],
    kind: str = "ours",
    max_memory: int = DEFAULT_MAX_MEMORY,
) -> Measurement:
    """`ours_cli` runs `tracereplay ingest` under `max_memory` (its wall: the whole process);
    `ours` reads in memory (budget lifted); `ours_streamed` takes the bounded-memory path under
    `max_memory`, spilling under `root`/spill."""
    say(f"measuring {kind} (a fresh warehouse)")
    out = root / f"{kind}.duckdb"
    for path in (out, out.with_name(out.name + ".wal"), root / "spill"):
        _remove(path)
    env = dict(os.environ)
    if kind == "ours":
        env[ENV_MAX_MEMORY] = "1TiB"
    elif kind == "ours_cli":
        env[ENV_MAX_MEMORY] = str(max_memory)
    else:
        env[ENV_MAX_MEMORY] = str(max_memory)
        env[ENV_SPILL_DIR] = str(root / "spill")
    load1 = _load()
    result = measure(
        kind,
        _probe_command(kind, trace.rank_dir, out),
        trace.mb,
        trace.events,
        env=env,
        timeout_s=PROBE_TIMEOUT_S,
    )
    result.extra["load1"] = load1
    if kind == "ours_cli" and result.ok:
        # what a user waits for: interpreter start and every import included
        result.extra["work_wall_s"] = result.wall_s
        result.wall_s = result.process_wall_s
    if result.ok:
        problems = list(result.extra.get("quarantined") or [])
        if result.rows != trace.complete_events:
            problems.append(f"stored {result.rows} slices, expected {trace.complete_events}")
        if problems:
            result.note = "; ".join(problems)[:300]
            result.status = "failed"  # wrong rows: its rate and RSS must not meet a target
    return result


def _measure_plain(
    kind: str, trace: GeneratedTrace, out: Path | None, say: Callable[[str], None]
) -> Measurement:
    say(f"measuring {kind}")
    if out is not None:
        for path in (out, out.with_name(out.name + ".wal")):
            _remove(path)
    load1 = _load()
    args = [trace.trace_path] + ([out] if out is not None else [])
    result = measure(
        kind,
        _probe_command(kind, *args),
        trace.mb,
        trace.events,
        timeout_s=PROBE_TIMEOUT_S,
    )
    result.extra["load1"] = load1
    expected = trace.complete_events if kind == "floor" else trace.events
    if result.ok and result.rows != expected:
        result.note = f"read {result.rows} events, expected {expected}"
    return result


def _measure_hta(
    trace: GeneratedTrace,
    root: Path,
    skip: bool,
    hta_python: str | None,
    hta_mb: float | None,
    setup: dict[str, Any],
    say: Callable[[str], None],
) -> Measurement:
    if skip:
        return _skipped("hta", trace, "skipped: --skip-hta")
    python = find_hta_python(hta_python)
    if python is None or not _hta_importable(python):
        return _skipped(
            "hta", trace, f"skipped: HTA not installed (use --hta-python or ${HTA_PYTHON_ENV})"
        )
    slice_mb = hta_slice_mb(trace.mb, hta_mb)
    what = "all events" if slice_mb is None else f"the first {slice_mb:g} MB of events"
    say(f"converting {what} to Kineto form for HTA")
    start = time.perf_counter()
    kineto: KinetoTrace = to_kineto(trace, root / "kineto" / "rank0.json.gz", max_mb=slice_mb)
    setup["kineto_s"] = time.perf_counter() - start
    setup["kineto_gz_mb"] = kineto.path.stat().st_size / MB
    say(f"measuring hta ({kineto.mb:.1f} MB, {kineto.events:,} events)")
    load1 = _load()
    result = measure(
        "hta",
        [python, str(HTA_PROBE), str(kineto.path.parent)],
        kineto.mb,
        kineto.events,
        cwd=root,
        timeout_s=PROBE_TIMEOUT_S,
    )
    result.extra["load1"] = load1
    result.extra["kineto_complete"] = kineto.complete
    if not result.ok:
        pass  # keep the failure's note (exit status and output tail)
    elif not kineto.complete:
        result.note = f"leading slice of {kineto.events:,} events (Kineto JSON MB)"
    else:
        result.note = "same events, Kineto JSON"
    return result
