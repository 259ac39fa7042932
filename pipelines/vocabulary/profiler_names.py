"""Names the profilers use, shared by the readers (pipelines/ingest) and the trace writers
(pipelines/sim): export file names, trace process names and canonical lanes, the Overlap Analysis
lanes, HCCL op naming and the group hash, and the metadata keys of the run conventions.

Neither side defines these itself: a writer that names a file or lane differently from what the
readers look for would produce traces the readers misread. Where each name comes from is in
docs/profiler_names.md (torch_npu / msprof exports observed on the real samples, msprof-analyze
source for the hash).
"""

from __future__ import annotations

# --- torch_npu text export (one `<worker>_<stamp>_ascend_pt/` folder per rank) -------------------
ASCEND_PT_SUFFIX = "_ascend_pt"
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
TRACE_VIEW = "trace_view.json"
KERNEL_DETAILS = "kernel_details.csv"
STEP_TRACE_TIME = "step_trace_time.csv"
COMMUNICATION = "communication.json"
COMMUNICATION_MATRIX = "communication_matrix.json"
METADATA = "profiler_metadata.json"


def profiler_info_name(rank: int) -> str:
    """`profiler_info_<rank>.json`, the per-rank info file beside ASCEND_PROFILER_OUTPUT/."""
    return f"profiler_info_{rank}.json"


# --- trace_view process names (`process_name` metadata events) and the canonical slice lanes -----
PYTHON_PROCESS = "Python"
HARDWARE_PROCESS = "Ascend Hardware"
HCCL_PROCESS = "HCCL"  # current msprof writes "Communication" for the same lane
OVERLAP_PROCESS = "Overlap Analysis"
PROFILER_STEP_PREFIX = "ProfilerStep#"
# slices.lane: host ranges, device compute tasks, communication ops, overlap lanes, the rest
LANES = ("host", "compute", "comm", "overlap", "other")

# --- Overlap Analysis lanes (thread names, tid 0..3) and the step_breakdown column of each -------
COMPUTING = "Computing"
COMMUNICATION_LANE = "Communication"
NOT_OVERLAPPED = "Communication(Not Overlapped)"
FREE = "Free"
OVERLAP_COLUMNS = {
    COMPUTING: "computing_ns",
    COMMUNICATION_LANE: "communication_ns",
    NOT_OVERLAPPED: "comm_not_overlapped_ns",
    FREE: "free_ns",
}
OVERLAP_LANES = tuple(OVERLAP_COLUMNS)

# --- HCCL op names: `hcom_<opType>__<G3>_<idx>[_<k>]`, <G3> = last three digits of the group hash -
# Point-to-point ops: msprof-analyze / MindSpore patterns plus batchSendRecv (batch_isend_irecv).
P2P_REGEX = r"(?i)^(hcom_(send|receive|\w*sendrecv)|(send|receive)-op)"
# The profiler's `Bubble` counts only ops whose name starts with hcom_receive.
RECEIVE_REGEX = r"(?i)^hcom_receive"
_MASK32 = 0xFFFFFFFF


def double_hash(text: str) -> int:
    """msprof-analyze's group hash: two 32-bit polynomial hashes (x29, x131) packed high|low."""
    high = low = 0
    for char in text:
        high = (high * 29 + ord(char)) & _MASK32
        low = (low * 131 + ord(char)) & _MASK32
    return (high << 32) | low


def group_suffix(group_hash: int) -> str:
    """`<G3>` of an hcom op name: the last three decimal digits of the group hash."""
    return f"{group_hash % 1000:03d}"


def hcom_op_name(op_type: str, g3: str, idx: int, k: int = 1) -> str:
    """`hcom_send__586_0_1`: the top-level name of the idx-th `op_type` op of a group."""
    return f"hcom_{op_type}__{g3}_{idx}_{k}"


# --- run conventions: keys users set with torch_npu `prof.add_metadata(key, value)` --------------
# (DESIGN.md conventions, plus `hardware` for the runs row when the profiler does not name it)
# `attention`: dense or sparse, which decides whether tau_k is expected linear (docs/tau_k.md)
CONVENTION_KEYS = (
    *("model", "schedule", "chunk_size", "seq_len", "tp", "pp", "vp", "hardware"),
    "attention",
)


# --- chunk markers in host range names -----------------------------------------------------------
# The project's `chunk[req=..,k=..]` markers and the forward annotations of inference engines
# (vLLM V1 `execute_[<T>_]context_<n>(...)`, SGLang `step[EXTEND ...]` / `step[MIXED ...]`;
# pipelines/analysis/chunks/engine_forwards.py): the SQL test for "this run carries markers".
MARKER_NAME_SQL = (
    "(name like 'chunk[%' or regexp_matches(name, "
    "'^(execute_([0-9]+_)?context_[0-9]+\\(|step\\[(EXTEND|MIXED) )'))"
)
