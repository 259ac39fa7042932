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
    bubble_ns bigint,                 -- profiler definition: hcom_receive* only
    comm_not_overlapped_excl_receive_ns bigint,
    preparing_ns bigint,
    p2p_bubble_ns bigint,             -- ours: wait inside all p2p ops (send, receive, batchSendRecv)
    complete boolean,
    incomplete_reason varchar         -- e.g. 'kernel_coverage 5.6 % of the profiler step window; ...'
);
