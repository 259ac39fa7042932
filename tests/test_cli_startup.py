"""Building the `tracereplay` parser stays light, and every command exits with one `ExitCode`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pipelines.cli
from pipelines.cli import ExitCode, main

HEAVY = ("polars", "numpy", "duckdb", "pandas", "pyarrow", "scipy", "statsmodels", "dagster")
CLI_DIR = Path(pipelines.cli.__file__).parent


def test_parser_build_imports_no_heavy_library() -> None:
    probe = (
        "import sys, pipelines.cli; pipelines.cli.build_parser(); "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == [], f"building the parser imported {out.strip()}"


def test_every_command_uses_the_one_exit_code_enum() -> None:
    for module in sorted(CLI_DIR.glob("*.py")):
        text = module.read_text()
        assert not re.search(r"^EXIT_\w+ = ", text, re.M), f"{module.name} defines its own codes"
        assert not re.search(r"return [0-9]\b", text), f"{module.name} returns a bare number"


def test_exit_codes_are_the_documented_values() -> None:
    assert [(c.name, c.value) for c in ExitCode] == [
        ("OK", 0),
        ("CHECK_FAILED", 1),
        ("BAD_INPUT", 2),
        ("INTERRUPTED", 130),
        ("TERMINATED", 143),
    ]
    assert main([]) == ExitCode.BAD_INPUT


def test_version_prints_the_installed_version(capsys) -> None:
    from importlib import metadata

    import pytest

    from pipelines.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"tracereplay {metadata.version('tracereplay')}"
