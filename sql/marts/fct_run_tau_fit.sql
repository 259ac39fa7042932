-- one row per run x virtual stage: the ordinary least-squares line tau_k = a + b*k over the run's
-- full chunks (a request's shorter remainder chunk left out, as `tracereplay fit` does). Same
-- point estimates as pipelines/analysis/tau/fits.py; its intervals and verdict come from `fit`.
select
    run_id,
    vstage,
    count(*) as n_points,
    regr_intercept(tau_ns, chunk_idx) as tau_intercept_ns,
    regr_slope(tau_ns, chunk_idx) as tau_slope_ns,
    regr_intercept(tau_ns, chunk_idx) / nullif(regr_slope(tau_ns, chunk_idx), 0) as tau_ab,
    regr_r2(tau_ns, chunk_idx) as tau_r2
from int_chunk_tau
where not is_partial
group by run_id, vstage
having count(distinct chunk_idx) >= 3
