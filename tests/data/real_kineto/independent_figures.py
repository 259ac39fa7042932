"""Independent per-step figures of a PyTorch profiler (Kineto) chrome trace.

Standalone oracle: standard library only, imports nothing from ``pipelines``.
Reads the raw file (``.json`` or gzip ``.json.gz``; top level an object with
``traceEvents`` or a bare list of events) and computes, from scratch:

* ``events``: how many events, per ``ph``; ``ph == "X"`` events per ``cat``
  (case as in the file).
* device events: ``ph == "X"`` with ``cat`` (case-insensitive) in
  {kernel, gpu_memcpy, gpu_memset, memcpy, memset}; each classified as
  memcpy, memset, communication (of which p2p) or compute (rules in
  ``classify``).
* steps: host windows ``[ts, ts + dur)`` of ``X`` events named
  ``ProfilerStep#N`` (any cat except ``gpu_*``: the ``gpu_user_annotation``
  copy of a step is a device-side window and is only counted).
* launch of a device event: the host runtime event (cat case-insensitive in
  RUNTIME_CATS) with the same ``args.correlation`` (or ``args["correlation
  id"]``); a second, independent way: flow events (``ph`` s/f, cat in
  FLOW_CATS) with the same ``id`` whose ``s`` lies in a runtime event and whose
  ``f`` lies on the device event. Correlation wins; the flow is used when the
  correlation finds nothing, and the two are compared where both exist.
* per step, launch rule (step = window holding the launch's ``ts``) and
  start-time rule (step = window holding the device event's own ``ts``):
  event count, plain sum of durations, and the union length of the compute,
  communication, p2p, memcpy, memset and all-device intervals. Events of a
  step are not clipped to the step's window. Device events whose launch (or
  start) falls in no window go to the bucket ``"(none)"``; device events with
  no launch found are reported under ``unlaunched``.

Times: trace ``ts``/``dur`` are microseconds; they are read exactly (decimal)
and turned into integer nanoseconds, so unions are exact; figures are printed
as microseconds with 3 decimals. A value with more than 3 decimals is rounded
half-even to the nanosecond and counted in ``quirks.sub_ns_values``.

Usage: ``python independent_figures.py TRACE [TRACE...]`` prints JSON (one
object for one path, else a list).
"""

import gzip
import json
import re
import sys
from bisect import bisect_right
from decimal import ROUND_HALF_EVEN, Decimal

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime", "hip_runtime", "hip_driver"}
FLOW_CATS = {"ac2g", "async", "async_gpu", "async_cpu_to_gpu"}
STEP_RE = re.compile(r"^ProfilerStep#(-?\d+)$")

COMM_RE = re.compile(
    r"^nccl|^ncclDevKernel|^rccl|cross_device_reduce|multimem_all_reduce|all_reduce|allreduce"
    r"|all_gather|allgather|reduce_scatter|reducescatter|alltoall|deep_ep|deepep|nvshmem",
    re.IGNORECASE,
)
EP_CONTEXT_RE = re.compile(r"deep_ep|internode|intranode", re.IGNORECASE)
EP_OP_RE = re.compile(r"dispatch|combine", re.IGNORECASE)
P2P_RE = re.compile(r"sendrecv|send_|recv_|_send|_recv", re.IGNORECASE)

NS = Decimal(1000)
CLASSES = ("compute", "communication", "p2p", "memcpy", "memset")


def _load(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"), parse_float=Decimal), len(raw)


class _Clock:
    """Microsecond values (int, Decimal or numeric string) -> integer ns."""

    def __init__(self):
        self.sub_ns = 0
        self.strings = 0
        self.bad = 0

    def ns(self, value):
        if value is None or isinstance(value, bool):
            return None
        if isinstance(value, str):
            self.strings += 1
            try:
                value = Decimal(value)
            except ArithmeticError:
                self.bad += 1
                return None
        if isinstance(value, int):
            return value * 1000
        if isinstance(value, float):  # not produced by _load, kept for callers
            value = Decimal(repr(value))
        if not isinstance(value, Decimal) or not value.is_finite():
            self.bad += 1
            return None
        scaled = value * NS
        exact = scaled.to_integral_value(rounding=ROUND_HALF_EVEN)
        if exact != scaled:
            self.sub_ns += 1
        return int(exact)


def classify(cat, name):
    """memcpy / memset / communication / p2p / compute for one device event.

    "p2p" is communication too: figures report communication including p2p and
    p2p on its own."""
    lc = cat.lower()
    if lc in ("memcpy", "gpu_memcpy") or name.startswith("Memcpy"):
        return "memcpy"
    if lc in ("memset", "gpu_memset") or name.startswith("Memset"):
        return "memset"
    comm = bool(COMM_RE.search(name)) or bool(EP_OP_RE.search(name) and EP_CONTEXT_RE.search(name))
    if comm:
        return "p2p" if P2P_RE.search(name) else "communication"
    return "compute"


def _union_ns(intervals):
    total = 0
    end = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def _us(ns):
    return round(ns / 1000.0, 3)


def _us_text(ns):
    """Exact microseconds as text (an epoch ts does not fit a float with 3 decimals)."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def _correlation(args):
    if not isinstance(args, dict):
        return None
    for key in ("correlation", "correlation id"):
        if key in args and args[key] is not None:
            return args[key]
    return None


def _bucket_figures(items):
    """items: list of (class, start_ns, end_ns)."""
    by_class = {c: [] for c in CLASSES}
    total = 0
    for klass, s, e in items:
        by_class[klass].append((s, e))
        total += e - s
    comm_all = by_class["communication"] + by_class["p2p"]
    out = {
        "count": len(items),
        "count_by_class": {
            "compute": len(by_class["compute"]),
            "communication": len(comm_all),
            "p2p": len(by_class["p2p"]),
            "memcpy": len(by_class["memcpy"]),
            "memset": len(by_class["memset"]),
        },
        "sum_us": _us(total),
        "union_us": {
            "compute": _us(_union_ns(by_class["compute"])),
            "communication": _us(_union_ns(comm_all)),
            "p2p": _us(_union_ns(by_class["p2p"])),
            "memcpy": _us(_union_ns(by_class["memcpy"])),
            "memset": _us(_union_ns(by_class["memset"])),
            "all_device": _us(_union_ns([(s, e) for _, s, e in items])),
        },
    }
    return out


class _Windows:
    def __init__(self, windows):
        # windows: list of (start_ns, end_ns, name)
        self.windows = sorted(windows)
        self.starts = [w[0] for w in self.windows]

    def find(self, t):
        """Name of the window holding t (half-open); the latest start wins if windows overlap."""
        i = bisect_right(self.starts, t) - 1
        while i >= 0:
            s, e, name = self.windows[i]
            if s <= t < e:
                return name
            i -= 1
        return None


def _lane(pid, tid):
    # old traces write a thread id as "123" on X events and 123 on flow events
    return (str(pid), str(tid))


class _Lanes:
    """Slices per (pid, tid) lane, to find the slice a flow event sits on."""

    def __init__(self):
        self.rows = {}
        self.starts = {}

    def add(self, key, start, end, idx):
        self.rows.setdefault(key, []).append((start, end, idx))

    def freeze(self):
        for key, rows in self.rows.items():
            rows.sort()
            self.starts[key] = [r[0] for r in rows]

    def holding(self, key, t, look_back=8):
        rows = self.rows.get(key)
        if not rows:
            return None
        i = bisect_right(self.starts[key], t) - 1
        stop = max(-1, i - look_back)
        while i > stop:
            s, e, idx = rows[i]
            if s <= t <= e:
                return idx
            i -= 1
        return None


def figures(path):
    data, raw_bytes = _load(path)
    clock = _Clock()
    if isinstance(data, list):
        events = data
        top_keys = []
        meta = {}
    elif isinstance(data, dict):
        events = data.get("traceEvents") or []
        top_keys = list(data.keys())
        meta = data
    else:
        raise ValueError("top level is neither an object nor a list")

    ph_counts = {}
    x_by_cat = {}
    non_dict = 0
    string_pids = set()
    hosts = []  # runtime events: (pid, tid, start, end, corr, idx)
    devices = []  # (idx, cat, name, start, end, corr, pid, tid)
    step_events = []
    gpu_step_events = 0
    flows_s = {}
    flows_f = []
    flow_cats = {}
    neg_dur = 0
    missing_dur = 0
    be_names = 0
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            non_dict += 1
            continue
        ph = ev.get("ph")
        ph_counts[str(ph)] = ph_counts.get(str(ph), 0) + 1
        pid = ev.get("pid")
        if isinstance(pid, str):
            string_pids.add(pid)
        cat = ev.get("cat")
        cat_s = cat if isinstance(cat, str) else ""
        lc = cat_s.lower()
        if ph in ("s", "f", "t"):
            if lc in FLOW_CATS:
                flow_cats[cat_s] = flow_cats.get(cat_s, 0) + 1
                t = clock.ns(ev.get("ts"))
                key = (ev.get("id"), cat_s)
                if ph == "s":
                    flows_s.setdefault(key, (ev.get("pid"), ev.get("tid"), t))
                elif ph == "f":
                    flows_f.append((key, ev.get("pid"), ev.get("tid"), t))
            continue
        if ph in ("B", "E"):
            be_names += 1
            continue
        if ph != "X":
            continue
        x_by_cat[str(cat)] = x_by_cat.get(str(cat), 0) + 1
        name = ev.get("name")
        name = name if isinstance(name, str) else str(name)
        start = clock.ns(ev.get("ts"))
        if start is None:
            continue
        dur = clock.ns(ev.get("dur"))
        if dur is None:
            missing_dur += 1
            dur = 0
        if dur < 0:
            neg_dur += 1
            dur = 0
        end = start + dur
        args = ev.get("args")
        if STEP_RE.match(name):
            if lc.startswith("gpu_"):
                gpu_step_events += 1
            else:
                step_events.append((start, end, name, cat_s))
        if lc in DEVICE_CATS:
            devices.append(
                (i, cat_s, name, start, end, _correlation(args), ev.get("pid"), ev.get("tid"))
            )
        elif lc in RUNTIME_CATS:
            hosts.append((ev.get("pid"), ev.get("tid"), start, end, _correlation(args), i))

    # steps (same name twice on the host side: merged into one window, reported)
    merged = {}
    for s, e, name, cat in step_events:
        if name in merged:
            ms, me, mcats, n = merged[name]
            merged[name] = (min(ms, s), max(me, e), mcats | {cat}, n + 1)
        else:
            merged[name] = (s, e, {cat}, 1)
    steps = sorted(((v[0], v[1], k) for k, v in merged.items()))
    windows = _Windows(steps)

    # launch by correlation
    runtime_by_corr = {}
    dup_corr = 0
    for _pid, _tid, s, _e, corr, idx in hosts:
        if corr is None:
            continue
        if corr in runtime_by_corr:
            dup_corr += 1
            continue
        runtime_by_corr[corr] = (s, idx)

    # launch by flow: s inside a runtime event (same pid/tid), f on a device event
    host_lanes = _Lanes()
    for pid, tid, s, e, _corr, idx in hosts:
        host_lanes.add(_lane(pid, tid), s, e, idx)
    host_lanes.freeze()
    host_start = {row[5]: row[2] for row in hosts}
    dev_lanes = _Lanes()
    for idx, _cat, _name, s, e, _corr, pid, tid in devices:
        dev_lanes.add(_lane(pid, tid), s, e, idx)
    dev_lanes.freeze()
    flow_launch = {}  # device idx -> runtime idx
    flow_s_unbound = 0
    flow_f_unbound = 0
    s_bound = {}
    for key, (pid, tid, t) in flows_s.items():
        if t is None:
            continue
        r = host_lanes.holding(_lane(pid, tid), t)
        if r is None:
            flow_s_unbound += 1
        else:
            s_bound[key] = r
    for key, pid, tid, t in flows_f:
        if t is None or key not in s_bound:
            flow_f_unbound += 1
            continue
        d = dev_lanes.holding(_lane(pid, tid), t)
        if d is None:
            flow_f_unbound += 1
            continue
        flow_launch.setdefault(d, s_bound[key])

    launch_items = {}
    start_items = {}
    unlaunched = []
    link = {
        "correlation": 0,
        "flow_only": 0,
        "none": 0,
        "flow_agrees": 0,
        "flow_disagrees": 0,
        "device_without_correlation": 0,
    }
    class_counts = {c: 0 for c in CLASSES}
    device_by_cat = {}
    nccl_not_comm = set()
    comm_names = {}
    for idx, cat, name, s, e, corr, _pid, _tid in devices:
        klass = classify(cat, name)
        class_counts[klass] += 1
        device_by_cat[cat] = device_by_cat.get(cat, 0) + 1
        if klass in ("communication", "p2p"):
            short = name[:100]
            comm_names[short] = comm_names.get(short, 0) + 1
        elif "nccl" in name.lower() or "rccl" in name.lower():
            nccl_not_comm.add(name[:100])
        item = (klass, s, e)
        start_items.setdefault(windows.find(s) or "(none)", []).append(item)
        if corr is None:
            link["device_without_correlation"] += 1
        launch_ts = None
        if corr is not None and corr in runtime_by_corr:
            launch_ts, ridx = runtime_by_corr[corr]
            link["correlation"] += 1
            if idx in flow_launch:
                link["flow_agrees" if flow_launch[idx] == ridx else "flow_disagrees"] += 1
        elif idx in flow_launch:
            launch_ts = host_start[flow_launch[idx]]
            link["flow_only"] += 1
        if launch_ts is None:
            link["none"] += 1
            unlaunched.append(item)
            continue
        launch_items.setdefault(windows.find(launch_ts) or "(none)", []).append(item)

    def ordered(buckets):
        names = [n for _, _, n in steps if n in buckets]
        if "(none)" in buckets:
            names.append("(none)")
        return {n: _bucket_figures(buckets[n]) for n in names}

    device_names = []
    if isinstance(meta.get("deviceProperties"), list):
        device_names = sorted(
            {str(d.get("name")) for d in meta["deviceProperties"] if isinstance(d, dict)}
        )
    keys_before = []
    for k in top_keys:
        if k == "traceEvents":
            break
        keys_before.append(k)

    return {
        "file": path.replace("\\", "/").rsplit("/", 1)[-1],
        "json_bytes": raw_bytes,
        "top_level": "list" if isinstance(data, list) else "object",
        "keys_before_traceEvents": keys_before if "traceEvents" in top_keys else None,
        "schemaVersion": meta.get("schemaVersion"),
        "displayTimeUnit": meta.get("displayTimeUnit"),
        "baseTimeNanoseconds": meta.get("baseTimeNanoseconds"),
        "device_names": device_names,
        "events": {
            "total": len(events),
            "by_ph": dict(sorted(ph_counts.items())),
            "x_events": sum(x_by_cat.values()),
            "x_by_cat": dict(sorted(x_by_cat.items())),
        },
        "device_events": {
            "total": len(devices),
            "by_cat": dict(sorted(device_by_cat.items())),
            "by_class": dict(
                class_counts, communication=class_counts["communication"] + class_counts["p2p"]
            ),
            "communication_names": dict(
                sorted(comm_names.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
            ),
            "nccl_named_but_not_communication": sorted(nccl_not_comm)[:10],
        },
        "runtime_events": len(hosts),
        "steps": [
            {
                "name": n,
                "ts_us": _us_text(s),
                "dur_us": _us(e - s),
                "host_events": merged[n][3],
                "cats": sorted(merged[n][2]),
            }
            for s, e, n in steps
        ],
        "gpu_side_step_events": gpu_step_events,
        "launch_link": dict(
            link,
            duplicate_runtime_correlations=dup_corr,
            flow_events_by_cat=dict(sorted(flow_cats.items())),
            flow_s_not_in_runtime=flow_s_unbound,
            flow_f_not_linked=flow_f_unbound,
        ),
        "per_step_launch_rule": ordered(launch_items),
        "per_step_start_rule": ordered(start_items),
        "unlaunched": _bucket_figures(unlaunched),
        "quirks": {
            "non_dict_events": non_dict,
            "string_pids": sorted(string_pids)[:10],
            "B_or_E_events": be_names,
            "negative_dur": neg_dur,
            "x_without_dur": missing_dur,
            "string_times": clock.strings,
            "unparsable_times": clock.bad,
            "sub_ns_values": clock.sub_ns,
        },
    }


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: independent_figures.py TRACE [TRACE...]\n")
        return 2
    out = [figures(p) for p in argv[1:]]
    json.dump(out[0] if len(out) == 1 else out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
