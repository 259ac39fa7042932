"""`uv run` in this project starts the command without recompiling the environment: with
`compile-bytecode` in `[tool.uv]` (or `uv run --compile-bytecode`) uv byte-compiles every
installed file on each call (15,925 files, 1.2-9.6 s, and a 'Bytecode compiled' line on stderr;
measured 2026-12-04 with `uv run --compile-bytecode python -c pass`). The README's set-up
compiles them once instead (`uv sync --compile-bytecode`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        pytest.skip("uv is not on PATH (the test runs under `uv run pytest`)")
    return uv


def test_the_project_does_not_ask_uv_to_compile_on_every_run() -> None:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text()).get("tool", {}).get("uv", {})
    assert not settings.get("compile-bytecode", False), settings


def test_uv_run_starts_the_command_without_compiling() -> None:
    env = {k: v for k, v in os.environ.items() if k != "UV_COMPILE_BYTECODE"}
    done = subprocess.run(
        [_uv(), "run", "--project", str(ROOT), "python", "-c", "import sys; print(sys.prefix)"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Bytecode compiled" not in done.stderr, done.stderr
    assert Path(done.stdout.strip()).resolve() == Path(sys.prefix).resolve()
