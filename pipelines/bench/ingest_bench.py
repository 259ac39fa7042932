"""The ingest benchmark: one large trace_view.json made of real events, parsed by our ingest and
by baselines, each in its own process; rates, peak RSS and the targets they are held to.

Paths (all on the same file, or for HTA on its Kineto conversion):
  ours      ingest_paths([rank folder]) into a fresh warehouse (discovery, hashing, all readers,
            derived tables, warehouse write)
  duckdb    DuckDB read_json(format='array', explicit columns) into a table: the fastest plain
            parse (docs/stack.md §6); duckdb_1t the same on one thread (the target uses
            the faster of the two)
  msgspec   typed msgspec decode, args left raw (no table)
  orjson    orjson.loads (no table; only when orjson is installed)
  hta       Holistic Trace Analysis TraceAnalysis(trace_dir) on the Kineto form (separate venv)

Targets: ours >= 0.5x the DuckDB parse rate, ours >= 10x the HTA rate (MB/s), our peak RSS
<= 2x the file size.
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
from pipelines.memory import DEFAULT_MAX_MEMORY, ENV_MAX_MEMORY, ENV_SPILL_DIR

HTA_PYTHON_ENV = "TRACEREPLAY_HTA_PYTHON"
HTA_PROBE = Path(__file__).with_name("hta_probe.py")
HTA_EXPECTED_MB_S = 7.5  # docs/stack.md §7: HTA parses about 7-8 MB/s of JSON (measured)
HTA_BUDGET_S = 180.0  # parse HTA a leading slice when the whole file would take longer
PROBE_TIMEOUT_S = 1800.0
DUCKDB_PATHS = ("duckdb", "duckdb_1t")  # default threads, one thread
ALL_PATHS = ("ours", "ours_streamed", *DUCKDB_PATHS, "msgspec", "orjson", "hta")


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
    return {
        "ours_vs_duckdb_cpu": _ratio(rates.get("ours"), _fastest_duckdb(rates)),
        "ours_vs_hta_cpu": _ratio(rates.get("ours"), rates.get("hta")),
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
        }


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _fastest_duckdb(rates: dict[str, float | None]) -> float | None:
    known = [rate for path, rate in rates.items() if path in DUCKDB_PATHS and rate]
    return max(known) if known else None


def targets_of(
    measurements: list[Measurement], file_mb: float, max_memory: int = DEFAULT_MAX_MEMORY
) -> list[Target]:
    """The targets from the measured paths (n/a where a path is missing or failed); the DuckDB
    rate is that of the faster DuckDB path (default threads or one thread). The streamed path
    is judged against the in-memory one measured in the same run, and against the budget."""
    rates = {m.path: m.mb_per_s for m in measurements}
    ours = next((m for m in measurements if m.path == "ours"), None)
    rss = ours.peak_rss_mb if ours is not None and ours.ok else None
    streamed = next((m for m in measurements if m.path == "ours_streamed"), None)
    streamed_rss = streamed.peak_rss_mb if streamed is not None and streamed.ok else None
    return [
        Target(
            "streamed_vs_in_memory_rate",
            "streamed MB/s / in-memory MB/s",
            _ratio(rates.get("ours_streamed"), rates.get("ours")),
            0.8,
            at_least=True,
        ),
        Target(
            "streamed_rss_vs_budget",
            f"streamed peak RSS / --max-memory ({max_memory / MB:,.0f} MB)",
            _ratio(streamed_rss, max_memory / MB),
            1.0,
            at_least=False,
        ),
        Target(
            "ours_vs_duckdb_rate",
            "our MB/s / DuckDB read_json MB/s",
            _ratio(rates.get("ours"), _fastest_duckdb(rates)),
            0.5,
            at_least=True,
        ),
        Target(
            "ours_vs_hta_rate",
            "our MB/s / HTA MB/s",
            _ratio(rates.get("ours"), rates.get("hta")),
            10.0,
            at_least=True,
        ),
        Target(
            "rss_vs_file",
            "our peak RSS / trace file size",
            _ratio(rss, file_mb),
            2.0,
            at_least=False,
        ),
    ]


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
    return [sys.executable, "-m", "pipelines.bench.probes", kind, *map(str, args)]


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
    paths: tuple[str, ...] = ALL_PATHS,
    flow_ids: str = "renumbered",
) -> IngestBenchReport:
    """Generate the trace, measure every path (all but HTA `repeat` times, reporting the run
    with the median wall time), compute the targets; cleans up unless keep. flow_ids:
    'renumbered' (shifted per copy) or 'repeated' (every copy keeps the source's ids)."""
    say = log or (lambda _msg: None)
    created = workdir is None
    root = Path(tempfile.mkdtemp(prefix="tracereplay-bench-")) if workdir is None else workdir
    root.mkdir(parents=True, exist_ok=True)
    owned = [root / "run", root / "kineto", root / "duckdb.duckdb"]
    owned += [root / "ours.duckdb", root / "ours_streamed.duckdb", root / "spill"]
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
    paths: tuple[str, ...] = ALL_PATHS,
    flow_ids: str = "renumbered",
) -> IngestBenchReport:
    load = {"load1_start": _load()}
    say(f"generating a {size_mb:g} MB trace_view.json from {source_rank_dir} in {root}")
    start = time.perf_counter()
    trace = generate_rank(root, size_mb, source_rank_dir, repeat_ids=flow_ids == "repeated")
    setup: dict[str, Any] = {"workdir": str(root), "generate_s": time.perf_counter() - start}
    setup["flow_ids"] = flow_ids
    say(f"  {trace.mb:.1f} MB, {trace.events:,} events, {trace.copies} copies")
    setup["repeat"] = repeat
    setup["max_memory_mb"] = max_memory / MB
    measurements = []
    for kind in ("ours", "ours_streamed"):
        if kind in paths:
            runs = [_measure_ours(trace, root, say, kind, max_memory) for _ in range(repeat)]
            measurements.append(median_of(runs))
    for kind in (*DUCKDB_PATHS, "msgspec"):
        if kind in paths:
            out = root / "duckdb.duckdb" if kind in DUCKDB_PATHS else None
            measurements.append(
                median_of([_measure_plain(kind, trace, out, say) for _ in range(repeat)])
            )
    if "orjson" not in paths:
        pass  # not asked for
    elif importlib.util.find_spec("orjson") is not None:
        measurements.append(
            median_of([_measure_plain("orjson", trace, None, say) for _ in range(repeat)])
        )
    else:
        measurements.append(_skipped("orjson", trace, "skipped: orjson not installed"))
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
        targets=targets_of(measurements, trace.mb, max_memory),
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


def _measure_ours(
    trace: GeneratedTrace,
    root: Path,
    say: Callable[[str], None],
    kind: str = "ours",
    max_memory: int = DEFAULT_MAX_MEMORY,
) -> Measurement:
    """`ours` reads in memory (budget lifted); `ours_streamed` takes the bounded-memory path
    under `max_memory`, spilling under `root`/spill."""
    say(f"measuring {kind} (ingest_paths into a fresh warehouse)")
    out = root / f"{kind}.duckdb"
    for path in (out, out.with_name(out.name + ".wal"), root / "spill"):
        _remove(path)
    env = dict(os.environ)
    if kind == "ours":
        env[ENV_MAX_MEMORY] = "1TiB"
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
    if result.ok and result.rows != trace.events:
        result.note = f"read {result.rows} events, expected {trace.events}"
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
    if not kineto.complete:
        result.note = f"leading slice of {kineto.events:,} events (Kineto JSON MB)"
    else:
        result.note = "same events, Kineto JSON"
    return result
