"""PngWriter: charts' PNGs rendered by worker processes (dashboards/png_render.py) while the
caller goes on building the next charts; the first worker also makes the page script bundle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# Worker processes beside the one building the charts (docs/dashboards.md "Build time").
PNG_PROCESSES = max(1, min(4, (os.cpu_count() or 1) - 1))


class PngRenderError(RuntimeError):
    """A chart could not be rendered (the message names its PNG and vl-convert's reason)."""


class _Worker:
    """One `python -m dashboards.png_render` process and the thread that reads its replies."""

    def __init__(self, on_reply) -> None:
        # a file, so a chatty worker can never block on a full pipe; closed in close()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "dashboards.png_render"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                text=True,
                encoding="utf-8",
            )
        except OSError as exc:  # an interpreter this user cannot run (issue 36 round seven)
            self.stderr.close()
            raise PngRenderError(
                f"the PNG renderer could not start: {sys.executable}: {exc.strerror}"
            ) from exc
        self.reader = threading.Thread(target=self._read, args=(on_reply,), daemon=True)
        self.reader.start()

    def _read(self, on_reply) -> None:
        for line in self.process.stdout:
            reply = json.loads(line)
            on_reply(reply["id"], reply["error"])

    def send(self, job: dict) -> None:
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()

    def close(self) -> str:
        """Close its jobs, wait for it; its stderr's tail."""
        self.process.stdin.close()
        self.process.wait()
        self.reader.join()
        self.stderr.seek(0)
        tail = self.stderr.read()[-2000:].decode("utf-8", "replace")
        self.stderr.close()
        return tail


class PngWriter:
    """Queue each chart's PNG (submit) to worker processes, which render and write it while the
    caller goes on: within one process vl-convert renders one chart at a time and keeps the GIL
    (dashboards/png_render.py). Leaving the `with` block waits for every PNG and raises
    PngRenderError for the first that failed."""

    def __init__(self, processes: int = PNG_PROCESSES, bundle: bool = True) -> None:
        self._spool = Path(tempfile.mkdtemp(prefix="tracereplay-png-"))
        self._done: dict[int, str | None] = {}
        self._outs: dict[int, str] = {}
        self._changed = threading.Condition()
        self._workers: list[_Worker] = []
        try:
            for _ in range(max(1, processes)):
                self._workers.append(_Worker(self._finished))
        except PngRenderError:
            for worker in self._workers:
                worker.close()
            shutil.rmtree(self._spool, ignore_errors=True)
            raise
        self._jobs = 0
        self._bundle_job = self._send("bundle", self._spool / "bundle.js") if bundle else None

    def _finished(self, job: int, error: str | None) -> None:
        with self._changed:
            self._done[job] = error
            self._changed.notify_all()

    def _send(self, kind: str, out: Path, spec: Path | None = None) -> int:
        job = self._jobs
        self._jobs += 1
        self._outs[job] = str(out)
        worker = self._workers[job % len(self._workers)]
        worker.send({"id": job, "kind": kind, "out": str(out), "spec": str(spec or "")})
        return job

    def submit(self, path: Path, spec: dict) -> None:
        """Render `spec` to `path` in a worker (the spec travels through a spool file)."""
        spec_path = self._spool / f"{self._jobs}.json"
        spec_path.write_text(json.dumps(spec, default=str), encoding="utf-8")
        self._send("png", Path(path), spec_path)

    def _wait(self, jobs: list[int]) -> None:
        with self._changed:
            alive = lambda: any(w.process.poll() is None for w in self._workers)  # noqa: E731
            while not all(j in self._done for j in jobs) and alive():
                self._changed.wait(timeout=0.5)

    def bundle(self) -> str | None:
        """The page script bundle a worker made (None when not asked for, or it failed)."""
        if self._bundle_job is None:
            return None
        self._wait([self._bundle_job])
        if self._done.get(self._bundle_job, "lost") is not None:
            return None
        return (self._spool / "bundle.js").read_text("utf-8")

    def __enter__(self) -> PngWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            stderr = [worker.close() for worker in self._workers]
            failed = [
                f"{Path(self._outs[j]).name}: {self._done.get(j) or 'worker exited'}"
                for j in range(self._jobs)
                if j != self._bundle_job and self._done.get(j, "lost") is not None
            ]
            if failed and exc[0] is None:
                tail = next((s.strip() for s in stderr if s.strip()), "")
                raise PngRenderError(
                    f"{len(failed)} PNG(s) not rendered, first {failed[0]}"
                    + (f" (worker stderr: {tail[-500:]})" if tail else "")
                )
        finally:
            shutil.rmtree(self._spool, ignore_errors=True)
