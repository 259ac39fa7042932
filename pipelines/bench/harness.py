"""Run one benchmark probe in its own process and measure it.

Wall time is the probe's own measurement of its work (interpreter start and imports excluded);
peak RSS is the child's `ru_maxrss` from `os.wait4` on that very child (so each path reports its
own peak, never the maximum over earlier children as RUSAGE_CHILDREN would).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.bench.ingest_children import RESULT_PREFIX

MB = 1_000_000


@dataclass
class Measurement:
    """One path's numbers on one input (status 'ok', 'skipped' or 'failed')."""

    path: str
    mb: float
    events: int
    status: str = "ok"
    wall_s: float | None = None
    cpu_s: float | None = None
    peak_rss_mb: float | None = None
    process_wall_s: float | None = None
    rows: int | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mb_per_s(self) -> float | None:
        return self.mb / self.wall_s if self.ok and self.wall_s else None

    @property
    def events_per_s(self) -> float | None:
        return self.events / self.wall_s if self.ok and self.wall_s else None

    @property
    def mb_per_cpu_s(self) -> float | None:
        return self.mb / self.cpu_s if self.ok and self.cpu_s else None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["mb_per_s"] = self.mb_per_s
        out["events_per_s"] = self.events_per_s
        out["mb_per_cpu_s"] = self.mb_per_cpu_s
        return out


@dataclass
class ProbeRun:
    """The raw outcome of one child process."""

    returncode: int
    result: dict[str, Any] | None
    peak_rss_mb: float
    process_wall_s: float
    output_tail: str
    timed_out: bool


def run_probe(
    command: list[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
) -> ProbeRun:
    """Run `command`, wait for it with os.wait4 and parse its BENCH_RESULT line."""
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            child.kill()

        timer = threading.Timer(timeout_s, kill) if timeout_s else None
        if timer is not None:
            timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        log.seek(0)
        output = log.read().decode("utf-8", "replace")
    result = None
    for line in output.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line.removeprefix(RESULT_PREFIX))
    return ProbeRun(
        returncode=child.returncode,
        result=result,
        peak_rss_mb=usage.ru_maxrss * 1024 / MB,  # Linux reports KiB
        process_wall_s=wall,
        output_tail=output[-2000:],
        timed_out=timed_out.is_set(),
    )


def measure(
    label: str,
    command: list[str],
    mb: float,
    events: int,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
) -> Measurement:
    """A Measurement of one probe command (failed, with the output tail as note, if it broke)."""
    run = run_probe(command, cwd=cwd, env=env, timeout_s=timeout_s)
    measurement = Measurement(
        path=label,
        mb=mb,
        events=events,
        peak_rss_mb=run.peak_rss_mb,
        process_wall_s=run.process_wall_s,
    )
    if run.returncode != 0 or run.result is None:
        measurement.status = "failed"
        why = f"timed out after {timeout_s:.0f} s" if run.timed_out else f"exit {run.returncode}"
        tail = run.output_tail.strip().splitlines()[-3:]
        measurement.note = f"{why}: " + " | ".join(tail)
        return measurement
    measurement.wall_s = float(run.result.pop("wall_s"))
    cpu = run.result.pop("cpu_s", None)
    measurement.cpu_s = None if cpu is None else float(cpu)
    measurement.rows = run.result.pop("rows", None)
    measurement.extra = run.result
    return measurement


def median_of(runs: list[Measurement]) -> Measurement:
    """The run with the median wall time (a failed run wins: failures must show); every wall
    time is kept in extra['walls_s']."""
    failed = [m for m in runs if not m.ok]
    if failed or len(runs) == 1:
        return failed[0] if failed else runs[0]
    ordered = sorted(runs, key=lambda m: m.wall_s or 0.0)
    chosen = ordered[(len(ordered) - 1) // 2]
    chosen.extra["walls_s"] = [round(m.wall_s or 0.0, 3) for m in runs]
    chosen.extra["peak_rss_mb_max"] = max(m.peak_rss_mb or 0.0 for m in runs)
    return chosen
