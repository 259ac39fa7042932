"""HCCL naming facts shared by the Ascend readers: group hash, op type, point-to-point ops.

See shared/research/ascend_formats.md §6: a top-level op is `hcom_<opType>__<G3>_<idx>[_<k>]`,
`<G3>` = last three digits of the group hash, and the hash after `@` in communication.json equals
double_hash(group_id) of the communicator name that the SQLite export stores raw."""

from __future__ import annotations

import re

import polars as pl

from pipelines.ingest.profiler_info import double_hash

# Point-to-point op names (msprof-analyze / MindSpore patterns, matched case-insensitively).
P2P_PATTERN = r"(?i)^(hcom_\w*sendrecv_|hcom_send_|hcom_receive_|send-op|receive-op)"
_OP_NAME = re.compile(r"^hcom_(?P<type>[A-Za-z0-9]+?)_+(?P<g3>\d+)_(?P<idx>\d+)(?:_(?P<k>\d+))?$")


def group_hash(group_id: str | None) -> str | None:
    """The group name used in communication.json keys: double_hash of the raw communicator id,
    as a decimal string. Ids that already are decimal hashes pass through unchanged."""
    if group_id is None or group_id == "":
        return None
    if group_id.isdigit():
        return group_id
    return str(double_hash(group_id))


def op_type_expr(column: str) -> pl.Expr:
    """`hcom_allReduce_` / `hcom_allReduce__586_0_1` -> `allReduce` (null when not an hcom name)."""
    return pl.col(column).str.extract(r"^hcom_([A-Za-z0-9]+?)_", 1)


def is_p2p_expr(column: str) -> pl.Expr:
    """True for point-to-point ops (send, receive, batchSendRecv ...)."""
    return pl.col(column).str.contains(P2P_PATTERN).fill_null(False)


def strip_group_digits(name: str) -> str:
    """`hcom_allReduce__210_0_1` -> `hcom_allReduce__G_0_1`: the op name without the group-hash
    digits, so the same op of two runs with different communicators compares equal."""
    m = _OP_NAME.match(name)
    if not m:
        return name
    tail = f"_{m['k']}" if m["k"] is not None else ""
    return f"hcom_{m['type']}__G_{m['idx']}{tail}"
