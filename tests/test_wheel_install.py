"""The built wheel, installed non-editable into a fresh venv, keeps its data in the working
folder: `tracereplay demo --quick` in an empty folder writes ./data/ there (nothing next to the
installed package), finds its SQL files as package data, and `tracereplay fit` with no flags then
prints the demo's fit table. Offline: every dependency comes from the uv cache that `uv sync`
filled, at the versions of uv.lock."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{cmd[:3]} exited {done.returncode}:\n{done.stderr[-2000:]}"
    return done


def _table(text: str) -> list[str]:
    """The fit table: the header line starting `model` and the rows up to the first blank."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model "))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_installed_wheel_writes_data_into_the_working_folder(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACEREPLAY_", "VIRTUAL_"))}
    _run([uv, "build", "--wheel", "--offline", "--out-dir", tmp_path / "dist"], REPO, env)
    (wheel,) = (tmp_path / "dist").glob("tracereplay-*.whl")
    # the locked dependencies straight from the lock's URLs (cached by `uv sync`), no index
    # resolution: `uv pip install -r` would need the index pages, which a frozen sync never fetched
    venv = tmp_path / "venv"
    sync_env = {**env, "UV_PROJECT_ENVIRONMENT": str(venv)}
    sync = ["sync", "-q", "--frozen", "--offline", "--no-dev", "--no-install-project"]
    _run([uv, *sync, "-p", sys.executable], REPO, sync_env)
    python = venv / "bin" / "python"
    _run([uv, "pip", "install", "-q", "--offline", "--no-deps", "-p", python, wheel], tmp_path, env)

    work = tmp_path / "empty"
    work.mkdir()
    tracereplay = venv / "bin" / "tracereplay"
    demo = _run([tracereplay, "demo", "--quick", "--no-replay"], work, env)
    assert (work / "data" / "warehouse.duckdb").is_file()
    assert any((work / "data" / "demo" / "raw").iterdir())
    where = "import pipelines, pipelines.paths as p; print(pipelines.__path__[0], p.SQL_DIR)"
    package, sql_dir = _run([python, "-c", where], work, env).stdout.split()
    assert Path(package).parent.name == "site-packages", package
    assert not (Path(package).parent / "data").exists(), "wrote next to the installed package"
    assert sql_dir == f"{package}/sql"

    fit = _run([tracereplay, "fit"], work, env)
    assert _table(fit.stdout) == _table(demo.stdout)
    assert len(_table(fit.stdout)) > 1
