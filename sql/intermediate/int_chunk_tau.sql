-- one row per chunk x virtual stage with its run configuration: tau_ns = device busy time of the
-- chunk on its stage; is_partial (int_chunk_flags) marks a request's shorter remainder chunk,
-- which curve fits leave out. The tensor-parallel ranks of a stage (one rank folder each when
-- every device was profiled, TP8 x PP2 = 16) run the same chunk in lockstep, their collectives
-- synchronising them: they are one measurement of the chunk, not tp repeats of it, so they make
-- one row (tau_ns their mean busy time, tp_ranks how many; start and end span them all).
-- A forward of an inference engine that batched several prefill pieces or decodes with its
-- prefill (chunks.batch_prefills / batch_decodes, pipelines/analysis/chunks/engine_forwards.py) is a
-- cost of the whole batch, not a tau_k point of one request: left out here. A run that is a
-- byte-identical copy of an earlier one (int_run_copies) is the same measurement: left out too.
-- The configuration columns come from stg_run_configuration, where a run without a model fact
-- (untagged real data) is a configuration of its own, '(untagged) <run_id>': runs of unknown
-- workloads are never pooled into one curve until the user tags them alike.
select
    c.run_id,
    r.source,
    r.schedule,
    r.chunk_size,
    r.seq_len,
    r.tp,
    r.pp,
    r.vp,
    r.hardware,
    r.attention,
    r.replay_of,
    r.collected_at,
    c.vstage,
    c.request_id,
    c.chunk_idx,
    r.model,
    cast(round(avg(c.busy_ns)) as bigint) as tau_ns,
    min(c.rank) as rank,
    max(c.tokens) as tokens,
    max(c.prefix_tokens) as prefix_tokens,
    min(c.start_ns) as start_ns,
    max(c.end_ns) as end_ns,
    count(*) as tp_ranks,
    bool_or(c.is_last_chunk) as is_last_chunk,
    bool_or(c.is_partial) as is_partial
from int_chunk_flags as c
inner join stg_run_configuration as r on c.run_id = r.run_id
where
    coalesce(c.batch_decodes, 0) = 0
    and coalesce(c.batch_prefills, 1) <= 1
    and c.run_id not in (select cp.run_id from int_run_copies as cp)
group by all
