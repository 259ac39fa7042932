"""Benchmarks: large-trace generation from real events and per-process measurement harnesses."""
