"""HCCL naming facts shared by the Ascend readers: group hash, op type, point-to-point ops.

See docs/ascend_formats.md §6: a top-level op is `hcom_<opType>__<G3>_<idx>[_<k>]`,
`<G3>` = last three digits of the group hash, and the hash after `@` in communication.json equals
double_hash(group_id) of the communicator name that the SQLite export stores raw."""

from __future__ import annotations

import re

import polars as pl

from pipelines.vocabulary.profiler_names import P2P_REGEX, RECEIVE_REGEX, double_hash

P2P_NAME = re.compile(P2P_REGEX)
RECEIVE_NAME = re.compile(RECEIVE_REGEX)
_OP_NAME = re.compile(
    r"^hcom_(?P<type>[A-Za-z0-9]+?)_{1,2}(?P<g3>\d+)_(?P<idx>\d+)(?:_(?P<k>\d+))?", re.IGNORECASE
)


def is_p2p_op(name: str) -> bool:
    """True for point-to-point ops: hcom_send*, hcom_receive*, hcom_*SendRecv* (any case)."""
    return P2P_NAME.match(name) is not None


def is_receive_op(name: str) -> bool:
    """True for the ops the profiler's `Bubble` counts (hcom_receive*)."""
    return RECEIVE_NAME.match(name) is not None


def op_type(name: str) -> str | None:
    """`hcom_allReduce__586_0_1` -> `allReduce`."""
    match = _OP_NAME.match(name)
    return match.group("type") if match else None


def op_group_suffix(name: str) -> str | None:
    """`hcom_allReduce__586_0_1` -> `586`, the last digits of the group hash."""
    match = _OP_NAME.match(name)
    return match.group("g3") if match else None


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
    return pl.col(column).str.contains(P2P_REGEX).fill_null(False)


def strip_group_digits(name: str) -> str:
    """`hcom_allReduce__210_0_1` -> `hcom_allReduce__G_0_1`: the op name without the group-hash
    digits, so the same op of two runs with different communicators compares equal."""
    m = _OP_NAME.match(name)
    if not m or m.end() != len(name):
        return name
    tail = f"_{m['k']}" if m["k"] is not None else ""
    return f"hcom_{m['type']}__G_{m['idx']}{tail}"
