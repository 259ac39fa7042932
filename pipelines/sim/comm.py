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

from dataclasses import dataclass
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
