"""Find runs in files and folders by their content, never by directory names.

* A rank folder is a folder holding `profiler_info*.json`, or an `ASCEND_PROFILER_OUTPUT/` child,
  or (alone) one of the text exports (trace_view.json, kernel_details.csv, step_trace_time.csv,
  communication*.json) or an `ascend_pytorch_profiler_N.db`. Its text files are preferred; a rank
  with only the SQLite export is a db rank. Inside a rank folder only ASCEND_PROFILER_OUTPUT/ is
  searched (FRAMEWORK/, PROF_*/ and logs/ hold the profiler's raw data).
* Rank folders that carry a profiler_info file and share a parent form one run (a cluster); a
  sibling `cluster_analysis_output/` belongs to that run. Rank folders without profiler_info
  (lone files) are single-rank runs.
* Kineto traces (`.json` / `.json.gz` objects whose `traceEvents` is an array of event objects)
  in one folder form one run per capture (`_kineto_captures`: files of distinct ranks are one
  run; a rank that repeats means several profiling sessions). `cluster_analysis_output/`
  without rank folders is a cluster run; a profiler_metadata.json or communication_group*.json
  beside rank folders belongs to their run, and alone (no rank data) it is listed as ignored with
  the reason (`Discovery.ignored_reasons`): a layout with nothing measured is not a run.
* Operator-latency tables (Vidur's attention.csv / mlp.csv, the generic tokens / prefix / time
  CSV or Parquet: pipelines.ingest.readers.latency_tables, recognised by their header) are `tables`.
* Quarantined: corrupt .db files, .json.gz that is not gzip, json/csv/db in a profiler layout that
  is none of the above, paths that do not exist, and folders given on the command line that hold
  no profiler output at all (`not_profiler_output`). Known by-products that no reader needs
  (operator_details.csv, memory_record.csv, ...) are listed as ignored.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.ingest.frames import Quarantined
from pipelines.ingest.readers import gz
from pipelines.ingest.readers.ascend_text import METADATA, OUTPUT_DIR, TEXT_INPUTS
from pipelines.ingest.readers.latency_tables import header_of as latency_header_of
from pipelines.ingest.readers.latency_tables import sniff as sniff_latency_table
from pipelines.ingest.readers.profiler_info import rank_from_file_name

PROFILER_INFO = re.compile(r"^profiler_info(_\d+)?\.json$")
DB_EXPORT = re.compile(r"^ascend_pytorch_profiler(_\d+)?\.db$")
CLUSTER_DIR = "cluster_analysis_output"
TOPOLOGY_FILES = re.compile(r"^(profiler_metadata|communication_group(_\w+)?)\.json$")
# Written by torch_npu / msprof next to the inputs, not needed by any reader.
KNOWN_UNUSED = frozenset(
    {
        "operator_details.csv",
        "op_statistic.csv",
        "api_statistic.csv",
        "l2_cache.csv",
        "memory_record.csv",
        "operator_memory.csv",
        "npu_module_mem.csv",
        "static_op_mem.csv",
        "data_preprocess.csv",
        "task_time.csv",
        "hccs.csv",
        "pcie.csv",
        "nic.csv",
        "roce.csv",
        "soc_pmu.csv",
        "analysis.db",
    }
)
DATA_SUFFIXES = (".json", ".csv", ".db", ".gz")
SQLITE_HEADER = b"SQLite format 3\x00"
_SNIFF = 1 << 18


@dataclass
class RankInput:
    """One rank folder and the reader that handles it."""

    path: Path
    reader: str  # "ascend_text" | "ascend_db"
    files: list[Path]
    rank_hint: int | None = None


@dataclass
class RunInput:
    """The inputs of one run."""

    origin: Path
    source: str  # ascend_pt | ascend_pt_db | kineto | cluster | topology
    ranks: list[RankInput] = field(default_factory=list)
    kineto_files: list[Path] = field(default_factory=list)
    cluster_dirs: list[Path] = field(default_factory=list)
    topology_files: list[Path] = field(default_factory=list)

    @property
    def files(self) -> list[Path]:
        """Every input file of the run, in a stable order (for the content hash)."""
        found: list[Path] = []
        for rank in self.ranks:
            found.extend(rank.files)
        found.extend(self.kineto_files)
        for folder in self.cluster_dirs:
            found.extend(sorted(p for p in folder.rglob("*") if p.is_file()))
        found.extend(self.topology_files)
        return sorted(set(found), key=lambda p: str(p))

    @property
    def total_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files)


@dataclass
class Discovery:
    """What a set of paths holds: runs, inputs set aside, and by-products skipped."""

    runs: list[RunInput] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    ignored: list[Path] = field(default_factory=list)
    tables: list[Path] = field(default_factory=list)
    """Operator-latency tables (docs/latency_tables.md)."""
    ignored_reasons: dict[Path, str] = field(default_factory=dict)
    """Why an ignored input is not read, for those that are not known by-products."""


def _head(path: Path, size: int = _SNIFF) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def is_sqlite(path: Path) -> bool:
    """Whether the file starts with the SQLite 3 header."""
    try:
        return _head(path, len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


_TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[\s*([{\]])')
# an event object with a category some Kineto schema writes (2021: Operator / Runtime / Kernel /
# Memcpy / Memset; today's names; device kinds the reader quarantines by name)
_KINETO_CATEGORY = re.compile(
    rb'"cat"\s*:\s*"(?:cpu_op|user_annotation|python_function|cuda_runtime|cuda_driver|kernel'
    rb"|gpu_memcpy|gpu_memset|gpu_user_annotation|cuda_sync|ac2g|Operator|Runtime|Kernel|Memcpy"
    rb'|Memset|Python|mtia_[a-z_]+|cuda_profiler_range)"'
)
_BLOCK = 1 << 20


def _json_blocks(path: Path) -> Iterable[bytes]:
    """The file's bytes (inflated when gzip) in 1 MiB blocks."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            yield block


GZIP_IN_GZIP = "gzip_in_gzip"
"""A .json.gz whose inflated bytes start with gzip's magic (compressed twice): it was named only
`not a trace` (issue 36 round six)."""


def sniff_kineto(path: Path) -> str | None:
    """None when `path` is a Kineto trace document: a JSON object whose `traceEvents` is an array
    of event objects (wherever the key sits: a wrapper may write a large metadata block first)
    and an event with a Kineto category; `not_kineto` for other chrome traces (Perfetto JSON),
    else a quarantine reason code. Reads the file in blocks until it has found both."""
    try:
        blocks = _json_blocks(path)
        head = next(blocks, b"").removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM
        if not head.strip():
            return "empty_file"
        if path.name.lower().endswith(".gz") and head.startswith(gz.GZIP_MAGIC):
            return GZIP_IN_GZIP
        if not head.lstrip().startswith(b"{"):
            return "not_a_trace"
        tail = b""
        found_events = found_category = False
        for block in _chain(head, blocks):
            window = tail + block
            found_events = found_events or bool(_TRACE_EVENTS.search(window))
            found_category = found_category or bool(_KINETO_CATEGORY.search(window))
            if found_events and found_category:
                return None
            tail = window[-128:]
    except gzip.BadGzipFile:
        return _sniff_whole_stream(path)
    except (EOFError, zlib.error):
        return "not_gzip"
    except OSError:
        return "unreadable"
    return "not_kineto" if found_events else "not_a_trace"


def _sniff_whole_stream(path: Path) -> str | None:
    """A .gz that gzip refused: when its members are whole and bytes that are no gzip member
    follow them (padding, stray bytes), the members alone are sniffed
    (pipelines/ingest/readers/gz)."""
    try:
        found = gz.scan(path)
    except (EOFError, zlib.error, ValueError):
        return "not_gzip"
    if not found.trailing:
        return "not_gzip"
    return sniff_kineto(gz.without_trailing(path, found.data_end))


def _chain(first: bytes, rest: Iterable[bytes]) -> Iterable[bytes]:
    yield first
    yield from rest


def _is_known_name(name: str) -> bool:
    """A file name some reader opens (a folder or FIFO under it is a broken input)."""
    return bool(
        name in TEXT_INPUTS
        or name == METADATA
        or PROFILER_INFO.match(name)
        or DB_EXPORT.match(name)
        or TOPOLOGY_FILES.match(name)
    )


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _kind(path: Path) -> str:
    """What a path that is not a regular file is, in words."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a broken link" if path.is_symlink() else "unreadable"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def _rank_dir_of(path: Path) -> Path:
    parent = path.parent
    return parent.parent if parent.name == OUTPUT_DIR else parent


class _Walk:
    """Accumulates classified files while walking the given paths."""

    def __init__(self) -> None:
        self.rank_dirs: set[Path] = set()
        self.kineto: dict[Path, list[Path]] = defaultdict(list)
        self.clusters: set[Path] = set()
        self.topology: dict[Path, list[Path]] = defaultdict(list)
        self.quarantined: list[Quarantined] = []
        self.ignored: list[Path] = []
        self.ignored_reasons: dict[Path, str] = {}  # why, for inputs that are not by-products
        self.bad_files: set[Path] = set()
        self.pending_json: list[tuple[Path, str, bool]] = []  # (path, problem, must quarantine)
        self.tables: list[Path] = []

    def quarantine(self, path: Path, reason: str, detail: str) -> None:
        self.quarantined.append(Quarantined(str(path), reason, detail))
        self.bad_files.add(path)

    def found_anything(self) -> int:
        found = len(self.rank_dirs) + len(self.kineto) + len(self.clusters) + len(self.topology)
        return found + len(self.tables)

    def walk_dir(self, root: Path) -> None:
        def unreadable(exc: OSError) -> None:
            where = Path(exc.filename or root)
            self.quarantine(where, "unreadable", exc.strerror or str(exc))

        seen: set[tuple[int, int]] = set()
        # symlinked folders (a rank folder linked in from elsewhere) are followed; a folder
        # reached twice (a link loop, or two links to one folder) is read once
        for folder, dirs, files in os.walk(root, onerror=unreadable, followlinks=True):
            here = Path(folder)
            try:
                info = os.stat(folder)
            except OSError:
                dirs[:] = []
                continue
            if (info.st_dev, info.st_ino) in seen:
                dirs[:] = []
                continue
            seen.add((info.st_dev, info.st_ino))
            names = set(files)
            if here.name == CLUSTER_DIR:
                self.clusters.add(here)
                dirs[:] = []
                continue
            is_rank = OUTPUT_DIR in dirs or any(PROFILER_INFO.match(n) for n in names)
            if is_rank:
                self.rank_dirs.add(here)
                dirs[:] = [d for d in dirs if d == OUTPUT_DIR]
            in_rank = is_rank or here.name == OUTPUT_DIR
            for name in [d for d in dirs if _is_known_name(d)]:
                self.quarantine(here / name, "not_a_file", f"{name} is a directory, not a file")
                dirs.remove(name)
            dirs.sort()
            for name in sorted(names):
                self.classify(here / name, in_rank=in_rank, explicit=False)

    def classify(self, path: Path, *, in_rank: bool, explicit: bool) -> None:
        name = path.name
        lowered = name.lower()
        if not _is_regular(path):  # never opened: a FIFO would block the read forever
            # a broken link with a data file's name anywhere is named too: a trace whose target
            # is gone was skipped without a word (issue 36 deliver 5)
            data_like = lowered.endswith(DATA_SUFFIXES)
            if explicit or _is_known_name(name) or (data_like and (in_rank or path.is_symlink())):
                self.quarantine(path, "not_a_file", f"{name} is {_kind(path)}, not a file")
            return
        if PROFILER_INFO.match(name):
            self.rank_dirs.add(path.parent)
        elif name in TEXT_INPUTS:
            self.rank_dirs.add(_rank_dir_of(path))
        elif DB_EXPORT.match(name) or name == "analysis.db":
            if not is_sqlite(path):
                detail = "empty file" if path.stat().st_size == 0 else "no SQLite 3 header"
                self.quarantine(path, "corrupt_db", f"{name}: {detail}")
            elif name == "analysis.db":
                self.ignored.append(path)
            else:
                self.rank_dirs.add(_rank_dir_of(path))
        elif name == METADATA and in_rank:
            pass  # read by the rank reader
        elif TOPOLOGY_FILES.match(name):
            self.topology[path.parent].append(path)
        elif name in KNOWN_UNUSED:
            self.ignored.append(path)
        elif lowered.endswith((".json", ".json.gz")):
            self.classify_json(path, in_rank=in_rank, explicit=explicit)
        elif lowered.endswith((".csv", ".parquet")) and sniff_latency_table(path):
            self.tables.append(path)
        elif lowered.endswith(".parquet") and latency_header_of(path) is None:
            # a Parquet file whose schema cannot be read (cut off, not Parquet) was passed over
            # without a word beside the tables it sat with (issue 36 round five)
            self.quarantine(path, "unreadable_table", f"{name}: no readable Parquet schema")
        elif lowered.endswith(DATA_SUFFIXES) and (in_rank or explicit):
            if lowered.endswith(".db") and not is_sqlite(path):
                self.quarantine(path, "corrupt_db", f"{name}: no SQLite 3 header")
            else:
                self.quarantine(path, "unrecognised_input", f"{name} is not a known profiler file")
        elif explicit:
            self.quarantine(path, "unrecognised_input", f"{name} is not a profiler output file")

    def classify_json(self, path: Path, *, in_rank: bool, explicit: bool) -> None:
        problem = sniff_kineto(path)
        if problem is None:
            self.kineto[path.parent].append(path)
            return
        must = in_rank or explicit or path.name.lower().endswith(".gz")
        self.pending_json.append((path, problem, must))

    def settle_json(self) -> None:
        """Quarantine non-trace JSON found in a profiler layout (a rank folder, next to Kineto
        traces) or named on the command line; other JSON files are not ours to judge."""
        for path, problem, must in self.pending_json:
            if must or path.parent in self.kineto or path.parent in self.rank_dirs:
                if problem == GZIP_IN_GZIP:
                    detail = f"{path.name}: {gz.GZIP_IN_GZIP_DETAIL}"
                    self.quarantine(path, "unrecognised_input", detail)
                    continue
                reason = problem if problem != "not_a_trace" else "unrecognised_input"
                self.quarantine(path, reason, f"{path.name}: {problem.replace('_', ' ')}")
            else:  # found, not ours to judge: listed, never silently dropped
                self.ignored.append(path)
        self.pending_json.clear()


def _text_inputs(rank_dir: Path, bad: set[Path]) -> list[Path]:
    out = rank_dir / OUTPUT_DIR if (rank_dir / OUTPUT_DIR).is_dir() else rank_dir
    files = [out / n for n in TEXT_INPUTS if (out / n).is_file() and out / n not in bad]
    meta = [rank_dir / METADATA] if (rank_dir / METADATA).is_file() else []
    info = sorted(p for p in rank_dir.iterdir() if PROFILER_INFO.match(p.name) and p.is_file())
    return info + meta + files


def _db_inputs(rank_dir: Path, bad: set[Path]) -> list[Path]:
    out = rank_dir / OUTPUT_DIR if (rank_dir / OUTPUT_DIR).is_dir() else rank_dir
    dbs = sorted(p for p in out.iterdir() if DB_EXPORT.match(p.name) and p not in bad)
    if not dbs:
        return []
    info = sorted(p for p in rank_dir.iterdir() if PROFILER_INFO.match(p.name) and p.is_file())
    meta = [rank_dir / METADATA] if (rank_dir / METADATA).is_file() else []
    analysis = [out / "analysis.db"] if (out / "analysis.db").is_file() else []
    return info + meta + dbs + [a for a in analysis if a not in bad]


def _rank_input(rank_dir: Path, bad: set[Path]) -> RankInput | None:
    info = next((p for p in sorted(rank_dir.glob("profiler_info*.json"))), None)
    hint = rank_from_file_name(info) if info else None
    text = _text_inputs(rank_dir, bad)
    if any(p.name in TEXT_INPUTS for p in text):
        return RankInput(rank_dir, "ascend_text", text, hint)
    db = _db_inputs(rank_dir, bad)
    if db:
        return RankInput(rank_dir, "ascend_db", db, hint)
    if info is not None and info not in bad:
        return RankInput(rank_dir, "ascend_text", text, hint)  # profiler_info only: identity
    return None


LONE_TOPOLOGY = (
    "a job's topology (communication groups, profiler_metadata.json) without the data of any of"
    " its ranks: nothing measured, so not a run; ingest it with its rank folders"
)


def _group_runs(walk: _Walk) -> list[RunInput]:
    ranks = [r for d in sorted(walk.rank_dirs) if (r := _rank_input(d, walk.bad_files))]
    by_parent: dict[Path, list[RankInput]] = defaultdict(list)
    runs: list[RunInput] = []
    for rank in ranks:
        has_info = any(PROFILER_INFO.match(p.name) for p in rank.files)
        if has_info:
            by_parent[rank.path.parent].append(rank)
        else:
            runs.append(RunInput(origin=rank.path, source=_source([rank]), ranks=[rank]))
    for parent, members in sorted(by_parent.items()):
        hints = [m.rank_hint for m in members if m.rank_hint is not None]
        if len(hints) != len(set(hints)):  # the same rank twice: separate runs
            runs.extend(RunInput(origin=m.path, source=_source([m]), ranks=[m]) for m in members)
            continue
        runs.append(RunInput(origin=parent, source=_source(members), ranks=members))
    # runs of rank folders under a common parent can own a sibling cluster/topology folder
    by_origin = {run.origin: run for run in runs if run.origin != run.ranks[0].path}
    for cluster in sorted(walk.clusters):
        owner = by_origin.get(cluster.parent)
        if owner is not None:
            owner.cluster_dirs.append(cluster)
        else:
            runs.append(RunInput(origin=cluster, source="cluster", cluster_dirs=[cluster]))
    for folder, files in sorted(walk.kineto.items()):
        runs.extend(_kineto_captures(folder, _without_gzipped_twins(set(files), walk)))
    for folder, files in sorted(walk.topology.items()):
        owner = by_origin.get(folder)
        unique = sorted(set(files))
        if owner is not None:
            owner.topology_files.extend(unique)
        else:  # a job's layout without any rank's data: nothing measured, not a run
            for path in unique:
                walk.ignored.append(path)
                walk.ignored_reasons[path] = LONE_TOPOLOGY
    return _distinct_origins(runs)


GZIPPED_TWIN = (
    "a gzipped copy of {plain} beside it: one trace written twice, read once (from {plain}),"
    " as trace_view.json.gz beside trace_view.json"
)


def _without_gzipped_twins(files: set[Path], walk: _Walk) -> list[Path]:
    """`files` without each `X.json.gz` whose `X.json` sits beside it: a user who gzipped a trace
    and kept both had it stored as two runs of one measurement, pooled as two repeats (issue 36
    round six). The .gz is skipped with a line, like trace_view.json.gz beside trace_view.json."""
    kept = []
    for path in sorted(files):
        plain = path.with_name(path.name[: -len(".gz")])
        if path.name.lower().endswith(".json.gz") and plain in files:
            walk.ignored.append(path)
            walk.ignored_reasons[path] = GZIPPED_TWIN.format(plain=plain.name)
        else:
            kept.append(path)
    return kept


def _distinct_origins(runs: list[RunInput]) -> list[RunInput]:
    """Each run at an origin of its own: a run's origin names it when it is stored (a second run
    at the same origin would replace the first), so where two runs would share a folder (a Kineto
    trace beside the rank folders of an Ascend run), the later one's origin is its first file."""
    taken: set[Path] = set()
    for run in runs:
        if run.origin in taken:
            run.origin = run.files[0]
        taken.add(run.origin)
    return runs


_DIST_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*"?(\d+)')
_NAME_RANK = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


def kineto_rank_hint(path: Path) -> int | None:
    """The rank a Kineto trace names in its `distributedInfo` (written ahead of `traceEvents`;
    the first MiB is read), else in its file name (`rank-3`, `rank_3`), else None."""
    try:
        head = next(iter(_json_blocks(path)), b"")
    except (OSError, EOFError, zlib.error):
        head = b""
    found = _DIST_RANK.search(head)
    if found:
        return int(found.group(1))
    named = _NAME_RANK.search(path.name)
    return int(named.group(1)) if named else None


def _kineto_captures(folder: Path, files: list[Path]) -> list[RunInput]:
    """The runs of a folder of Kineto traces. Files of distinct ranks are one run (one file per
    rank of a job). A folder where a rank repeats holds several captures (vLLM and SGLang write
    one file per worker per profiling session, named `<worker>.<time>.pt.trace.json[.gz]`): the
    k-th file of each rank, in name order, is capture k. A file without a known rank is a run of
    its own. Each capture's origin is its first file, so captures replace only themselves."""
    if len(files) == 1:
        return [RunInput(origin=folder, source="kineto", kineto_files=files)]
    hints = {path: kineto_rank_hint(path) for path in files}
    known = [h for h in hints.values() if h is not None]
    if len(known) == len(files) and len(set(known)) == len(known):
        return [RunInput(origin=folder, source="kineto", kineto_files=files)]
    captures: list[list[Path]] = []
    seen: dict[int, int] = defaultdict(int)
    for path in files:
        rank = hints[path]
        if rank is None:
            captures.append([path])
            continue
        index = seen[rank]
        seen[rank] += 1
        ranked = [c for c in captures if hints[c[0]] is not None]
        if index < len(ranked):
            ranked[index].append(path)
        else:
            captures.append([path])
    return [
        RunInput(origin=capture[0], source="kineto", kineto_files=sorted(capture))
        for capture in captures
    ]


def _source(ranks: list[RankInput]) -> str:
    return "ascend_pt" if any(r.reader == "ascend_text" for r in ranks) else "ascend_pt_db"


def discover(paths: Iterable[str | os.PathLike[str]]) -> Discovery:
    """Classify everything under `paths` into runs, quarantined inputs and ignored files."""
    walk = _Walk()
    for raw in paths:
        path = Path(raw).resolve()
        if not path.exists():
            walk.quarantined.append(Quarantined(str(path), "not_found", "no such file or folder"))
            continue
        before = (walk.found_anything(), len(walk.quarantined))
        try:
            if path.is_dir():
                walk.walk_dir(path)
            else:
                walk.classify(path, in_rank=path.parent.name == OUTPUT_DIR, explicit=True)
        except OSError as exc:  # an unreadable file or folder: quarantined, the others go on
            where = exc.filename or path
            walk.quarantine(Path(where), "unreadable", exc.strerror or str(exc))
            continue
        if path.is_dir() and (walk.found_anything(), len(walk.quarantined)) == before:
            walk.quarantined.append(
                Quarantined(str(path), "not_profiler_output", "no profiler output found inside")
            )
    walk.settle_json()
    runs = _group_runs(walk)
    return Discovery(
        runs=runs,
        quarantined=walk.quarantined,
        ignored=sorted(set(walk.ignored)),
        tables=sorted(set(walk.tables)),
        ignored_reasons=dict(sorted(walk.ignored_reasons.items())),
    )
