"""Point-to-point activation transfers between pipeline ranks.

One hop carries a chunk's hidden states: `t = latency + tokens * bytes_per_token / bandwidth`.
Two modes (docs/schedules.md §7):

* `blocking`: the sender's stream is busy for the whole transfer, which starts as soon as the
  producing stage ends; the receiver, when it reaches the receive in its program order, blocks
  until the data has arrived. Its device receive is launched once the sender has started (a host
  handshake, as vLLM's send/recv of tensor dicts does), so the wait before that is idle time.
* `async`: the transfer runs without occupying either stream. The receiver pre-posts the
  receive one task ahead (when it starts the task before the consumer) and the consumer waits
  only if the data has not arrived. Transfers do not contend for link bandwidth: a FIFO link
  plus pre-posted receives can deadlock (a packed request's transfer queued ahead of the one the
  receiver waits for).

Fold-point continuations (consecutive virtual stages on one rank) need no transfer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

CommMode = Literal["blocking", "async"]
COMM_MODES: tuple[str, ...] = ("blocking", "async")


@dataclass(frozen=True)
class CommModel:
    """Cost of one cross-rank hop and how it interacts with compute."""

    latency_ns: float = 0.0
    bytes_per_token: float = 0.0
    bytes_per_s: float = float("inf")
    mode: CommMode = "blocking"

    def __post_init__(self) -> None:
        if self.mode not in COMM_MODES:
            raise ValueError(f"comm mode must be one of {COMM_MODES}, not {self.mode!r}")

    def hop_ns(self, tokens: np.ndarray) -> np.ndarray:
        """Transfer time (ns, float) of a chunk of `tokens` tokens."""
        c = np.asarray(tokens, dtype=np.float64)
        return self.latency_ns + 1e9 * c * self.bytes_per_token / self.bytes_per_s

    def with_mode(self, mode: CommMode) -> CommModel:
        return CommModel(self.latency_ns, self.bytes_per_token, self.bytes_per_s, mode)


def activation_comm(
    hidden: int, dtype_bytes: int, tp: int, bytes_per_s: float, latency_ns: float
) -> CommModel:
    """Hidden-state transfer where each of the `tp` ranks of a stage sends its 1/tp slice."""
    return CommModel(latency_ns, hidden * dtype_bytes / tp, bytes_per_s)


@dataclass(frozen=True)
class CollectiveModel:
    """Collectives inside one stage call of layers [lo, hi): per layer one tensor-parallel
    AllReduce after attention and one after a dense FFN, and on MoE layers the expert-parallel
    dispatch + combine all-to-all instead of the FFN AllReduce. Each op costs
    `latency + bytes / bandwidth`:

        tp   n_tp x tp_latency_ns + tokens x tp_bytes_per_token / tp_bytes_per_s
        ep   n_ep x ep_latency_ns + tokens x ep_bytes_per_token / ep_bytes_per_s

    `tp_ops`, `ep_ops` and the byte counts are cumulative per layer (index l+1 holds layers
    0..l). `blocking`: the forward pass waits for every collective (vLLM-Ascend's eager TP and
    EP ops), so they sit on the critical path after the compute of their call; otherwise they run
    under the call's compute and only the part longer than it is exposed."""

    tp_ops: np.ndarray
    ep_ops: np.ndarray
    tp_bytes_per_token: np.ndarray
    ep_bytes_per_token: np.ndarray
    tp_latency_ns: float
    tp_bytes_per_s: float
    ep_latency_ns: float
    ep_bytes_per_s: float
    blocking: bool = True

    def parts_ns(
        self, tokens: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> dict[str, np.ndarray]:
        """`allreduce` (TP) and `alltoall` (EP) time (ns, float) of stage calls."""
        c = np.asarray(tokens, dtype=np.float64)
        lo = np.asarray(layer_lo, dtype=np.int64)
        hi = np.asarray(layer_hi, dtype=np.int64)

        def span(cum: np.ndarray) -> np.ndarray:
            return cum[hi] - cum[lo]

        tp = (
            span(self.tp_ops) * self.tp_latency_ns
            + 1e9 * c * span(self.tp_bytes_per_token) / self.tp_bytes_per_s
        )
        ep = (
            span(self.ep_ops) * self.ep_latency_ns
            + 1e9 * c * span(self.ep_bytes_per_token) / self.ep_bytes_per_s
        )
        return {"allreduce": tp, "alltoall": ep}

    def with_blocking(self, blocking: bool) -> CollectiveModel:
        return replace(self, blocking=blocking)


COLLECTIVE_KINDS: tuple[str, ...] = ("allreduce", "alltoall")
