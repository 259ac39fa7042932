"""The nightly history's grid: one run per configuration and night, one collection time per
night, run-level noise of the stated size, the injected slowdown only where and when stated."""

from __future__ import annotations

from datetime import UTC, datetime
from statistics import pstdev

import numpy as np

from pipelines.campaign import Campaign
from pipelines.nightly_history import InjectedRegression, NightlyHistory, ScaledCost
from pipelines.sim import presets
from pipelines.sim.run import simulate


def test_one_run_per_configuration_and_night_with_one_collection_time_per_night() -> None:
    history = NightlyHistory()
    runs = history.runs()
    assert len(runs) == len(history.configs) * history.nights == 72
    stamps = [history.night_epoch_ns(n) for n in range(history.nights)]
    days = [datetime.fromtimestamp(t / 1e9, tz=UTC).date().isoformat() for t in stamps]
    assert days[0] == history.first_night and len(set(days)) == history.nights
    assert np.all(np.diff(stamps) == 86_400 * 10**9)


def test_run_noise_is_about_the_stated_size_and_the_slowdown_is_where_it_was_injected() -> None:
    history = NightlyHistory(nights=200, regression=InjectedRegression(config=0, night=100))
    clean, slow = history.configs[1], history.configs[0]
    factors = [history.compute_factor(clean, n) for n in range(200)]
    assert 0.014 < pstdev(np.log(factors)) < 0.022  # sigma 1.8 %, n = 200
    assert history.compute_factor(clean, 5) == NightlyHistory().compute_factor(clean, 5)
    before = [history.compute_factor(slow, n) for n in range(100)]
    after = [history.compute_factor(slow, n) for n in range(100, 200)]
    step = np.mean(np.log(after)) - np.mean(np.log(before))
    assert abs(step - np.log(1.05)) < 0.01
    assert not history.is_regressed(clean, 150) and history.is_regressed(slow, 100)
    assert not history.is_regressed(slow, 99)
    expected = history.expected_regression()
    assert expected is not None and expected["model"] == slow.model and expected["night"] == 100


def test_scaled_cost_with_factor_one_simulates_the_preset_exactly() -> None:
    model = "deepseek-v3.1"
    plain = simulate([65536], "cpp", model=model, chunk_size=16384, pp=2, noise=0.03, seed=3)
    scaled = ScaledCost(presets.cost_model(model), 1.0)
    comm = presets.comm_model(model)
    coll = presets.collective_model(model)
    same = simulate(
        [65536],
        "cpp",
        model=scaled,
        comm=comm,
        collectives=coll,
        chunk_size=16384,
        pp=2,
        noise=0.03,
        seed=3,
    )
    assert plain.tasks.equals(same.tasks)
    slower = ScaledCost(presets.cost_model(model), 1.05)
    slow = simulate(
        [65536],
        "cpp",
        model=slower,
        comm=comm,
        collectives=coll,
        chunk_size=16384,
        pp=2,
        noise=0.03,
        seed=3,
    )

    def span(r) -> int:
        return r.tasks["end_ns"].max() - r.tasks["start_ns"].min()

    assert 1.03 < span(slow) / span(plain) <= 1.05 + 1e-9  # compute scaled, transfers not


def test_campaign_holds_the_five_schedules_and_the_history_the_quick_one_neither() -> None:
    campaign = Campaign()
    runs = campaign.runs()
    grid = [r for r in runs if r.night is None and r.chunk_size is None]
    short = [r for r in runs if r.chunk_size is not None]
    nightly = [r for r in runs if r.night is not None]
    assert {r.schedule for r in grid} == {"cpp", "dcpp", "vpp", "vpp_async", "vpp_pack"}
    assert {r.seq_len for r in grid} == {131072, 262144}
    assert len(grid) == 3 * (2 * 2 + 3) * 3 and len(nightly) == 72
    # the top-k bend: glm-5.2 in 1K chunks, 16 requests a run, the campaign's repeats
    assert [r.key(campaign) for r in short] == [f"glm-5.2-cpp-16k-c1k-x16-r{i}" for i in range(3)]
    assert all(r.night is None and r.requests == 16 for r in short)
    keys = [r.key(campaign) for r in runs]
    assert len(set(keys)) == len(keys) and keys[-1] == "glm-5.2-cpp-64k-c16k-n23"
    assert len({r.seed(campaign) for r in runs}) == len(runs)
    quick = campaign.quick().runs()
    assert len(quick) == 9 and all(r.night is None and r.schedule == "cpp" for r in quick)
    assert all(r.chunk_size is None for r in quick)
