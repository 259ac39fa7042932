"""What a simulated run becomes on disk and in a summary: trace files in the requested formats,
the shape its traces show (scheduler steps, TP ranks), and the checks that keep a new run from
being merged with earlier output in the same folder. `tracereplay simulate`, the demo's campaign
and the tests share them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pipelines.sim.result import SimResult


class OutputFolderError(ValueError):
    """The output folder holds something a new run must not be mixed with."""


def summary(result: SimResult, extra: dict[str, Any]) -> dict[str, Any]:
    """Run summary: the simulator's metrics plus schedule-specific figures."""
    from pipelines.sim.metrics import summarize

    out = summarize(result)
    out.update(extra)
    if result.meta.get("dcpp_rule") == "vllm_ascend":
        out["dcpp_online"] = result.meta.get("dcpp_online")
    if "budget_sweep" in result.meta:
        out["budget_sweep"] = result.meta["budget_sweep"]
    if "disturbance" in result.meta:
        out["disturbance"] = result.meta["disturbance"]
    return out


def previous_outputs(out: Path) -> tuple[list[Path], list[Path]]:
    """Trace output already under `out`: (written by this command earlier, anything else that
    ingest would read together with a new run)."""
    if not out.is_dir():
        return [], []
    ours: list[Path] = []
    foreign: list[Path] = []
    for path in sorted(out.glob("*_ascend_pt")):
        (ours if path.name.startswith("sim-") else foreign).append(path)
    for path in sorted((out / "kineto").glob("*.pt.trace.json")):
        (ours if path.name.startswith("sim-") else foreign).append(path)
    ours += sorted(out.glob("*.perfetto.json"))
    return ours, foreign


def check_out(out: Path, overwrite: bool) -> list[Path]:
    """What must be removed from `out` before writing a new run there. Refuses to mix a new run
    with earlier output (ingest would merge their ranks into one run): foreign profiler output
    always, an earlier run of this command unless `overwrite`."""
    ours, foreign = previous_outputs(out)
    if foreign:
        raise OutputFolderError(
            f"--out {out} already holds profiler output not written by this command "
            f"({foreign[0].name}); choose another folder"
        )
    if ours and not overwrite:
        raise OutputFolderError(
            f"--out {out} already holds a simulated run ({len(ours)} entries, e.g. "
            f"{ours[0].name}); choose an empty folder or pass --overwrite"
        )
    return ours


def remove_outputs(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def traced_result(result: SimResult, detail: str = "tasks", tp_ranks: bool = False) -> SimResult:
    """The run as its traces show it: one ProfilerStep per scheduler step with "layers" detail,
    one rank per TP rank with `tp_ranks` (pipelines.sim.trace_shape)."""
    from pipelines.sim.trace_shape import expand_tp_ranks, with_scheduler_steps

    if detail == "layers":
        result = with_scheduler_steps(result)
    if tp_ranks:
        result = expand_tp_ranks(result)
    return result


def write_outputs(
    result: SimResult,
    out: Path,
    formats: list[str],
    detail: str = "tasks",
    tp_ranks: bool = False,
) -> list[Path]:
    """Write the requested trace formats under `out` (traced_result's shape); return what was
    written."""
    result = traced_result(result, detail, tp_ranks)
    written: list[Path] = []
    if "ascend" in formats:
        from pipelines.sim.writers_ascend import write_ascend_pt

        written += write_ascend_pt(result, out, detail=detail)  # type: ignore[arg-type]
    if "kineto" in formats:
        from pipelines.sim.writers_kineto import write_kineto_trace

        written += write_kineto_trace(result, out / "kineto")
    if "chrome" in formats:
        from pipelines.sim.writers_chrome import write_chrome_trace

        name = f"{result.meta.get('schedule', 'sim')}.perfetto.json"
        written.append(write_chrome_trace(result, out / name))
    return written
