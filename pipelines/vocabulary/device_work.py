"""One classification of device work, for every reader: compute, communication (collective or
point-to-point), memory copy, memset, or other.

Two kinds of evidence, in this order (docs/device_work.md has the table with its sources):

1. the profiler's own category: Kineto `gpu_memcpy` / `Memcpy` and `gpu_memset` / `Memset`
   (every schema since 2021), Ascend task types of DMA copies;
2. the kernel name, from the table `NAME_TABLE`: NCCL / RCCL kernels, vLLM's and SGLang's custom
   all-reduce, torch symmetric-memory and TensorRT-LLM / FlashInfer all-reduce, DeepEP and pplx
   all-to-all kernels, NVSHMEM, Ascend HCCL ops;
3. structure: a kernel launched inside a host range that only communication opens (torch's
   `record_param_comms`, `nccl:<collective>`, `c10d::<collective>`) is communication even when
   its name is unknown, unless the name is an ATen / Triton compute kernel.

Collective or point-to-point: the collective's name (from the kernel's args, the host range, or
the name table) is p2p when it is a send / receive (`SendRecv`, `send`, `recv`, `isend`,
`irecv`, `batch_isend_irecv`, Ascend `hcom_send` / `hcom_receive` / `*SendRecv*`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

COMPUTE = "compute"
COLLECTIVE = "collective"
P2P = "p2p"
MEMCPY = "memcpy"
MEMSET = "memset"
OTHER = "other"
WORK_CLASSES = (COMPUTE, COLLECTIVE, P2P, MEMCPY, MEMSET, OTHER)
COMM_CLASSES = (COLLECTIVE, P2P)

# Kineto categories, lower-cased (2021 schema: Kernel / Memcpy / Memset; later: kernel /
# gpu_memcpy / gpu_memset)
MEMCPY_CATEGORIES = ("gpu_memcpy", "memcpy")
MEMSET_CATEGORIES = ("gpu_memset", "memset")
KERNEL_CATEGORIES = ("kernel",)
DEVICE_CATEGORIES = KERNEL_CATEGORIES + MEMCPY_CATEGORIES + MEMSET_CATEGORIES

P2P_OP_REGEX = (
    r"(?i)^_?(send|recv|sendrecv|isend|irecv|batch_isend_irecv|p2p|receive)$"
    r"|^hcom_(send|receive|\w*sendrecv)|^(send|receive)-op"
)
"""A collective name (or an Ascend op name) that is point-to-point."""


@dataclass(frozen=True)
class NameRule:
    """Kernel names matching `regex` are `work_class`; `op_type` names the collective (None:
    read it from the name's first capture group, else from the host range)."""

    regex: str
    work_class: str
    op_type: str | None
    source: str


NAME_TABLE: tuple[NameRule, ...] = (
    # NCCL and RCCL device kernels: ncclKernel_<Coll>_<Algo>_<Proto>_<Op>_<Type>,
    # ncclDevKernel_<Coll>_... (NCCL >= 2.19); RCCL keeps the NCCL names
    NameRule(r"^nccl(?:Dev)?Kernel_(SendRecv|Send|Recv)\b", P2P, None, "NCCL src/device"),
    NameRule(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)", COLLECTIVE, None, "NCCL src/device"),
    NameRule(r"(?i)^rccl", COLLECTIVE, None, "RCCL"),
    # vLLM custom all-reduce (csrc/custom_all_reduce.cuh); SGLang's sgl-kernel carries the same
    # kernels (sgl-kernel/csrc/allreduce/custom_all_reduce.cuh)
    NameRule(r"cross_device_reduce_\dstage", COLLECTIVE, "allreduce", "vLLM / SGLang"),
    # vLLM quick all-reduce (ROCm), SGLang / TensorRT-LLM / FlashInfer fused all-reduce
    NameRule(r"(?i)quickreduce::allreduce", COLLECTIVE, "allreduce", "vLLM quick_all_reduce"),
    NameRule(
        r"(?i)allreduce_fusion|lamport|twoshot_allreduce|oneshot_allreduce",
        COLLECTIVE,
        "allreduce",
        "TensorRT-LLM / FlashInfer",
    ),
    # torch symmetric memory (torch.distributed._symmetric_memory): multimem / one-shot /
    # two-shot all-reduce, used by vLLM's symm_mem all-reduce
    NameRule(
        r"(?i)multimem_all_reduce|one_shot_all_reduce|two_shot_all_reduce"
        r"|multimem_all_gather|reduce_scatter_kernel",
        COLLECTIVE,
        "allreduce",
        "torch symmetric memory",
    ),
    # DeepEP (deep_ep::intranode / internode / internode_ll: notify_dispatch, dispatch, combine,
    # cached_notify_*); pplx-kernels all-to-all
    NameRule(r"deep_ep::", COLLECTIVE, "alltoall", "DeepEP csrc/kernels"),
    NameRule(r"(?i)pplx::|all2all|alltoall|all_to_all", COLLECTIVE, "alltoall", "pplx / MoE a2a"),
    # NVSHMEM device-initiated transfers and proxies
    NameRule(r"(?i)nvshmem", COLLECTIVE, "nvshmem", "NVSHMEM"),
    # MSCCL++ (SGLang's mscclpp all-reduce)
    NameRule(r"(?i)mscclpp", COLLECTIVE, "allreduce", "MSCCL++"),
    # Ascend HCCL ops on the device (kernel_details HCCL rows, db COMMUNICATION_OP names)
    NameRule(r"(?i)^hcom_(send|receive|\w*sendrecv)", P2P, None, "HCCL op names"),
    NameRule(r"(?i)^hcom_([A-Za-z]+)", COLLECTIVE, None, "HCCL op names"),
)

COMM_HOST_RANGE = r"^(record_param_comms$|nccl:|c10d::|hccl:|c10d_functional::)"
"""Host ranges that only communication opens (torch.distributed's profiling hooks)."""

COMPUTE_NAME = r"(?i)(at::native|^triton_|^void at::|elementwise_kernel|^cutlass|gemm)"
"""Names that stay compute even when a communication range launched them (copies and casts
around a collective)."""


def _name_rules() -> tuple[pl.Expr, pl.Expr]:
    """(class, op_type) of a kernel name by NAME_TABLE; null when no rule matches."""
    name = pl.col("name")
    klass: pl.Expr = pl.lit(None, pl.String)
    op: pl.Expr = pl.lit(None, pl.String)
    for rule in reversed(NAME_TABLE):  # the first matching rule wins
        hit = name.str.contains(rule.regex)
        klass = pl.when(hit).then(pl.lit(rule.work_class)).otherwise(klass)
        rule_op = pl.lit(rule.op_type) if rule.op_type else name.str.extract(rule.regex, 1)
        op = pl.when(hit).then(rule_op).otherwise(op)
    return klass, op


def classify(
    frame: pl.DataFrame,
    *,
    category: str = "cat",
    comm_range: str | None = None,
    collective: str | None = None,
) -> pl.DataFrame:
    """`frame` (device events: `name`, a category column) with `work_class` and `op_type`.

    `comm_range`: optional column holding the name of the communication host range that
    launched the event (null: none); `collective`: optional column with the collective's name
    from the event's own args. Events in no device category are `other`."""
    cat = pl.col(category).cast(pl.String).str.to_lowercase()
    # the name rules run once per distinct name (a trace repeats a few hundred kernel names)
    klass_of_name, op_of_name = _name_rules()
    names = frame.select(pl.col("name").unique()).with_columns(
        klass_of_name.alias("_by_name"),
        op_of_name.alias("_op_by_name"),
        pl.col("name").str.contains(COMPUTE_NAME).alias("_compute_name"),
    )
    frame = frame.join(names, on="name", how="left", nulls_equal=True)
    by_name, op_by_name = pl.col("_by_name"), pl.col("_op_by_name")
    host = pl.col(comm_range) if comm_range else pl.lit(None, pl.String)
    own = pl.col(collective) if collective else pl.lit(None, pl.String)
    from_host = host.str.extract(r"^(?:nccl:|c10d::|hccl:|c10d_functional::)(.+)$", 1)
    # the collective a host range or the kernel's args name beats the kernel's name: NCCL runs
    # all_to_all (and, sampled by HTA, all_reduce) as SendRecv kernels
    op_type = (
        pl.coalesce(own, from_host, op_by_name).str.strip_chars_start("_").str.replace(r"_$", "")
    )
    structural = host.is_not_null() & ~pl.col("_compute_name")
    is_comm = by_name.is_not_null() | structural
    is_p2p = op_type.str.contains(P2P_OP_REGEX).fill_null(False)
    klass = (
        pl.when(cat.is_in(MEMCPY_CATEGORIES) | pl.col("name").str.starts_with("Memcpy"))
        .then(pl.lit(MEMCPY))
        .when(cat.is_in(MEMSET_CATEGORIES) | pl.col("name").str.starts_with("Memset"))
        .then(pl.lit(MEMSET))
        .when(~cat.is_in(KERNEL_CATEGORIES))
        .then(pl.lit(OTHER))
        .when(is_comm & is_p2p)
        .then(pl.lit(P2P))
        .when(is_comm)
        .then(pl.lit(COLLECTIVE))
        .otherwise(pl.lit(COMPUTE))
    )
    return frame.with_columns(
        klass.alias("work_class"),
        pl.when(is_comm).then(op_type).alias("op_type"),
    ).drop("_by_name", "_op_by_name", "_compute_name")


# --- which device slices of a canonical trace are work ---------------------------------------

EXCLUDED_DEVICE_CATEGORIES = ("gpu_user_annotation", "gpu_memcpy", "gpu_memset", "non_kernel_task")
"""Compute-lane slices that are not work: annotations (Kineto mirrors user ranges on the GPU),
memory copies / memsets (their own breakdown columns) and Ascend db tasks that are not kernels
(no COMPUTE_TASK_INFO row: stream waits and records, copies, profiling markers; the SQLite
reader gives them this category, pipelines/ingest/readers/ascend_db.py)."""

NON_WORK_TASK_TYPES = (
    "Notify Wait",
    "Notify Record",
    "Write Value",
    "EVENT_WAIT_SQE",
    "EVENT_RECORD_SQE",
    "PLACE_HOLDER_SQE",
    "PCIE_DMA_SQE",
    "SDMA_SQE",
)
"""Ascend `Task Type`s that are stream synchronisation or DMA copies, which the profiler's
`Computing` leaves out: with them left out too, the busy time of a ProfilerStep window equals
step_trace_time's Computing (real set B, tests/analysis/test_segment_real.py)."""

COMM_LINK_KEY = "connection_id"
"""An Ascend Hardware task whose connection_id is also on the HCCL lane is that op's transfer."""


def work_slices(frame: pl.DataFrame, include_comm: bool = False) -> pl.DataFrame:
    """Device slices of `frame` (canonical slices with row_id, rank, lane, category, args) that
    are work: compute-lane kernels (annotations, copies, stream waits and the transfers of HCCL
    ops left out), plus the comm lane when `include_comm`. The one rule of chunk segmentation
    (pipelines/analysis/chunks/segment.py) and the Ascend launch-attributed step breakdown
    (pipelines/ingest/steps/ascend_launch.py), so the two agree."""
    compute = frame.filter(pl.col("lane") == "compute")
    if "category" in compute.columns:
        compute = compute.filter(
            pl.col("category").is_null() | ~pl.col("category").is_in(EXCLUDED_DEVICE_CATEGORIES)
        )
    task_type = pl.col("args").str.json_path_match("$['Task Type']")
    compute = compute.filter(task_type.is_null() | ~task_type.is_in(NON_WORK_TASK_TYPES))
    comm = frame.filter(pl.col("lane") == "comm")
    link = pl.col("args").str.json_path_match(f"$['{COMM_LINK_KEY}']")
    comm_links = comm.select("rank", link.alias("_link")).drop_nulls().unique()
    on_comm = (
        compute.select("row_id", "rank", link.alias("_link"))
        .join(comm_links, on=["rank", "_link"], how="semi")
        .get_column("row_id")
    )
    transfers = compute.filter(pl.col("row_id").is_in(on_comm.implode()))
    compute = compute.filter(~pl.col("row_id").is_in(on_comm.implode()))
    if not include_comm:
        return compute
    return pl.concat([compute, transfers, comm], how="vertical_relaxed")
