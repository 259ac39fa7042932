"""The chart-rendering worker: a process of its own (`python -m dashboards.png_render`, started by
dashboards.png_writer) that renders Vega-Lite specs to PNG and makes the inline JavaScript bundle,
both by vl-convert. It imports nothing of the caller, so it starts in well under a second and
never re-runs the caller's script (as multiprocessing's spawn would, for an unguarded one).

Why a process: within one process vl-convert renders one chart at a time, whatever the number
of threads (85 demo charts: 12.9 s on one thread, 13.2 s on two), and its Python calls keep the
GIL (a Python loop beside `javascript_bundle` ran 5x slower), so a thread pool overlaps nothing
with chart building (docs/dashboards.md "Build time").

Protocol: one JSON object a line on stdin, {"id", "kind": "png" | "bundle", "out", "spec"}
("spec": the path of a JSON file holding the spec); one line back on stdout per job,
{"id", "error": null or the message}."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

import vl_convert as vlc


def write_png(path: str | Path, spec: dict) -> None:
    """Render `spec` to PNG (scale 1) and write it to `path`."""
    Path(path).write_bytes(vlc.vegalite_to_png(spec, scale=1))


def script_bundle() -> str:
    """vega + vega-lite + vega-embed as one script (~0.9 MB) to inline in a page, `</script`
    escaped so the bundle cannot close its own tag."""
    return vlc.javascript_bundle().replace("</script", "<\\/script")


def serve(jobs: TextIO, replies: TextIO) -> None:
    """Run the jobs read from `jobs` until it closes, one reply line each."""
    for line in jobs:
        job = json.loads(line)
        error = None
        try:
            if job["kind"] == "bundle":
                Path(job["out"]).write_text(script_bundle(), encoding="utf-8")
            else:
                write_png(job["out"], json.loads(Path(job["spec"]).read_text("utf-8")))
        except Exception as exc:  # reported to the caller, which raises it
            error = f"{type(exc).__name__}: {exc}"
        replies.write(json.dumps({"id": job["id"], "error": error}) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
