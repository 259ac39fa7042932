"""Replay: the measured chunks of an ingested run re-simulated under other schedules.

measured_run.py    the measured run (runs row and chunks) a replay starts from
tabulated_cost.py  the cost model that replays the measured tau (TabulatedCost)
rerun.py           replay(chunks, schedules): the run's requests under each schedule (pipelines.sim)
tables.py          the canonical tables of a simulated run (the one converter SimResult -> tables)
store.py           replay_run: read the measured run from the warehouse, replay, store the reruns
"""
