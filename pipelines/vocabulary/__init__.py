"""The shared trace vocabulary: what readers, writers, the simulator and the analyses all name the
same way, with no project import above it.

profiler_names  file, lane, marker and op names of the profiler exports (docs/profiler_names.md)
device_work     the classification of device work: compute, collective, p2p, memcpy, memset, other
                (docs/device_work.md)
intervals       interval arithmetic on event spans (union, overlap, clipping to a window)
overlap         the overlap-analysis lanes and how communication is split into overlapped and
                exposed time
configuration   the run facts that make runs one configuration (source and hardware included)"""
