"""Reference workload: a small PyTorch prefill engine that writes real Kineto traces.

Optional: needs torch (`scripts/install-torch`, docs/workload.md). Nothing here is
imported by the rest of the package, and the CLI imports it only when `tracereplay workload`
runs.

config.py        WorkloadConfig: model size, prompt, chunking, schedule, attention, sends
model.py         the decoder-only transformer (GQA, KV cache, dense or top-k sparse attention)
plan.py          the per-rank task order of CPP and VPP (fold-back) for two ranks
rank_process.py  one rank: gloo process group, receives, chunk markers, profiler, trace export
launch.py        run_workload(config, out): spawn the ranks, return the trace paths
on_cpu.py        the chunks' on-CPU times from the traces' metadata (no torch import)
"""
