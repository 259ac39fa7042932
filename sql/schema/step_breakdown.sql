-- origin: derived (recomputed by tracereplay), profiler (step_trace_time.csv / analysis.db), cluster
-- (msprof-analyze cluster_step_trace_time.csv), sim (simulated rerun). complete: false when a derived
-- row cannot be right (its input covers too little of the step, or it disagrees with the profiler's
-- own figures: docs/step_breakdown.md), null when nothing judges it; true for every other origin
create table if not exists step_breakdown (
    run_id varchar not null,
    rank integer not null,
    step integer,
    origin varchar not null,
    computing_ns bigint,
    communication_ns bigint,
    comm_not_overlapped_ns bigint,
    overlapped_ns bigint,
    free_ns bigint,
    stage_ns bigint,
    bubble_ns bigint,
    comm_not_overlapped_excl_receive_ns bigint,
    preparing_ns bigint,
    p2p_bubble_ns bigint,
    complete boolean,
    incomplete_reason varchar,
    memcpy_ns bigint,
    memset_ns bigint,
    launch_coverage double
);

comment on table step_breakdown is 'Per rank and step: computing, communication, overlap, free, bubble (ns).';
comment on column step_breakdown.run_id is 'run of the step';
comment on column step_breakdown.rank is 'rank of the step';
comment on column step_breakdown.step is 'profiler step';
comment on column step_breakdown.origin is 'derived, profiler, cluster or sim';
comment on column step_breakdown.computing_ns is 'compute time (ns)';
comment on column step_breakdown.communication_ns is 'communication time (ns)';
comment on column step_breakdown.comm_not_overlapped_ns is 'communication not overlapped by compute (ns)';
comment on column step_breakdown.overlapped_ns is 'communication overlapped by compute (ns)';
comment on column step_breakdown.free_ns is 'device idle time (ns)';
comment on column step_breakdown.stage_ns is 'step window (ns)';
comment on column step_breakdown.bubble_ns is 'profiler definition: hcom_receive* only (ns)';
comment on column step_breakdown.comm_not_overlapped_excl_receive_ns is
'not-overlapped communication without receives (ns)';
comment on column step_breakdown.preparing_ns is 'time before the first device task of the step (ns)';
comment on column step_breakdown.p2p_bubble_ns is 'ours: wait inside all p2p ops (send, receive, batchSendRecv) (ns)';
comment on column step_breakdown.complete is 'false when a derived row cannot be right, null when nothing judges it';
comment on column step_breakdown.incomplete_reason is 'e.g. kernel_coverage 5.6 % of the profiler step window; ...';
comment on column step_breakdown.memcpy_ns is 'memory copies (Memcpy HtoD / DtoH / DtoD), not computing (ns)';
comment on column step_breakdown.memset_ns is 'memsets, not computing (ns)';
comment on column step_breakdown.launch_coverage is
'device time launched in the step window over device time assigned to the step (derived rows)';
