"""scripts/restore-real-data against a tiny bare git repository built in tmp_path: one line per
file (restored / already there / missing from the snapshot / checksum mismatch) and exit 1 when
anything could not be restored."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "restore-real-data"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
FILES = {
    "data/table.csv": b"tokens,time\n1,2.5\n",
    "traces/t.json.gz": bytes(range(256)) * 4,
    "big/lfs.bin": b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 9\n",
}


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def mirrors(tmp_path: Path) -> tuple[Path, str]:
    """MIRRORS/o+r/repo: a bare repository with one commit of FILES; (MIRRORS, the commit)."""
    bare = tmp_path / "mirrors" / "o+r" / "repo"
    _git("init", "--bare", "-q", str(bare))
    work = tmp_path / "work"
    for rel, data in FILES.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(data)
    _git("--git-dir", str(bare), "--work-tree", str(work), "add", ".")
    _git("--git-dir", str(bare), "--work-tree", str(work), "commit", "-q", "-m", "data")
    return tmp_path / "mirrors", _git("--git-dir", str(bare), "rev-parse", "HEAD")


def _entry(here: str, path: str, commit: str, data: bytes, repo: str = "o/r") -> dict:
    return {
        "here": here,
        "repo": repo,
        "commit": commit,
        "path": path,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def _run(mirrors: Path, manifest: Path) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--mirrors", str(mirrors), "--manifest", str(manifest)],
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stdout.splitlines()


def _manifest(folder: Path, entries: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "real_manifest.json"
    path.write_text(json.dumps({"files": entries}))
    return path


def test_restores_byte_for_byte_then_finds_them_there(tmp_path: Path, mirrors) -> None:
    root, commit = mirrors
    table, trace = FILES["data/table.csv"], FILES["traces/t.json.gz"]
    manifest = _manifest(
        tmp_path / "here",
        [
            _entry("v/abc/table.csv", "data/table.csv", commit, table),
            # a commit the snapshot lacks: the blob is found by its path in the history
            _entry("k/t.json.gz", "traces/t.json.gz", "0" * 40, trace),
        ],
    )
    code, lines = _run(root, manifest)
    assert code == 0, lines
    assert lines[:2] == ["restored: v/abc/table.csv", "restored: k/t.json.gz"]
    assert (tmp_path / "here/v/abc/table.csv").read_bytes() == table
    assert (tmp_path / "here/k/t.json.gz").read_bytes() == trace

    (tmp_path / "here/k/t.json.gz").write_bytes(b"a damaged copy")
    code, lines = _run(root, manifest)
    assert code == 0, lines
    assert lines[:2] == ["already there: v/abc/table.csv", "restored: k/t.json.gz"]
    assert (tmp_path / "here/k/t.json.gz").read_bytes() == trace


def test_mismatch_and_missing_are_named_and_exit_1(tmp_path: Path, mirrors) -> None:
    root, commit = mirrors
    good = _entry("ok.csv", "data/table.csv", commit, FILES["data/table.csv"])
    wrong = {**good, "here": "wrong.csv", "sha256": "0" * 64}
    absent = _entry("absent.csv", "data/absent.csv", commit, b"x")
    lfs = _entry("big.bin", "big/lfs.bin", commit, b"the real large file")
    other = _entry("other.csv", "data/table.csv", commit, b"x", repo="o/not-fetched")
    manifest = _manifest(tmp_path / "here", [good, wrong, absent, lfs, other])
    code, lines = _run(root, manifest)
    assert code == 1, lines
    assert lines[0] == "restored: ok.csv"
    assert lines[1].startswith("checksum mismatch: wrong.csv (o/r data/table.csv")
    assert lines[2].startswith("missing from the snapshot: absent.csv (")
    assert lines[3].startswith("missing from the snapshot: big.bin (") and "Git LFS" in lines[3]
    assert lines[4].startswith("missing from the snapshot: other.csv (no snapshot of o/not-fetched")
    assert lines[5] == ("1 restored, 1 checksum mismatch, 3 missing from the snapshot of 5 files")
    assert not (tmp_path / "here/wrong.csv").exists()
    assert not (tmp_path / "here/big.bin").exists()


def test_a_blob_the_snapshot_lists_but_does_not_hold_is_missing(tmp_path: Path, mirrors) -> None:
    """A large file a snapshot's tree names without its blob (as `git ls-tree -l` shows BAD)."""
    root, commit = mirrors
    bare = root / "o+r" / "repo"
    data = FILES["traces/t.json.gz"]
    entry = _entry("t.json.gz", "traces/t.json.gz", commit, data)
    blob = _git("--git-dir", str(bare), "rev-parse", f"{commit}:traces/t.json.gz")
    (bare / "objects" / blob[:2] / blob[2:]).unlink()
    code, lines = _run(root, _manifest(tmp_path / "here", [entry]))
    assert code == 1
    assert lines[0].startswith("missing from the snapshot: t.json.gz (o/r ")
    assert lines[0].endswith(":traces/t.json.gz not held)")


def test_a_manifest_path_outside_its_folder_is_refused(tmp_path: Path, mirrors) -> None:
    root, commit = mirrors
    escape = _entry("../out.csv", "data/table.csv", commit, FILES["data/table.csv"])
    code, lines = _run(root, _manifest(tmp_path / "here", [escape]))
    assert (code, lines) == (2, [])
    assert not (tmp_path / "out.csv").exists()


def test_help_explains_the_statuses() -> None:
    done = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    for word in ("--mirrors", "restored", "already there", "missing from the snapshot"):
        assert word in done.stdout
    assert "checksum mismatch" in done.stdout


def test_the_committed_manifest_names_each_file_once_inside_tests_data() -> None:
    manifest = SCRIPT.parents[1] / "tests" / "data" / "real_manifest.json"
    files = json.loads(manifest.read_text())["files"]
    heres = [f["here"] for f in files]
    assert len(heres) == len(set(heres))
    tops = {h.split("/")[0] + "/" + h.split("/")[1] for h in heres}
    assert tops == {
        "real_kineto/hta",
        "real_kineto/kineto",
        "real_kineto/tracelens",
        "real_engines/tracelens",
        "latency_tables/vidur",
        "latency_tables/aiconfigurator",
    }
    for entry in files:
        assert len(entry["sha256"]) == 64 and len(entry["blob"]) == 40, entry["here"]
