"""Step attribution from canonical rows: which host slice launched each device slice, and the
per-rank, per-step time breakdown built on it. Readers call it; it reads no file."""
