"""A simulated nightly history: a few configurations run once a night, with one injected regression.

Real nightly runs of one configuration differ by more than the simulator's per-task noise: the
per-task lognormal noise (3 %) averages out over a run's hundreds of tasks, while nightly
benchmarks drift run to run by 1.5-2 % (the noise the change-point rule must ignore, issue 9,
docs/demo.md). So each nightly run draws one run-level compute factor exp(sigma z), z ~ N(0, 1),
from a seed that depends only on (seed, model, schedule, seq_len, night), and every compute
task of that run is scaled by it (`ScaledCost`, transfers unchanged). From the regression's
night on, its configuration is `slowdown` slower as well: the step `tracereplay regressions`
should find, and the only one.

Each night's runs are written with the profiler clock at `first_night` + night days, 02:00 UTC,
so `collected_at` (the profiler's collectionTimeEnd) is one per night.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from pipelines.sim.cost_models import StageCost

NANOS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class ScaledCost:
    """A stage cost model with every compute time (and call overhead) multiplied by `factor`."""

    base: StageCost
    factor: float

    @property
    def name(self) -> str:
        return getattr(self.base, "name", type(self.base).__name__)

    @property
    def num_layers(self) -> int:
        return self.base.num_layers

    @property
    def call_overhead_ns(self) -> float:
        return self.base.call_overhead_ns * self.factor

    def stage_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> np.ndarray:
        return self.base.stage_ns(tokens, prefix, layer_lo, layer_hi) * self.factor


@dataclass(frozen=True)
class NightlyConfig:
    """One configuration of the nightly series (chunk size and pp are the campaign's)."""

    model: str
    schedule: str
    seq_len: int


@dataclass(frozen=True)
class InjectedRegression:
    """From `night` on (0-based), runs of configs[config] are `slowdown` slower (0.05 = +5 %)."""

    config: int = 0
    night: int = 13
    slowdown: float = 0.05


@dataclass(frozen=True)
class NightlyHistory:
    """`nights` nights of one run per configuration; nights=0 writes no history. 24 nights leave
    11 after the regression's night 13. A point is confirmed once it still stands in the scans
    1-10 nights shorter with 10 tested nights before it, or at once when its p is in the fast
    lane (p <= 0.00014, FAST_CONFIRM_SHARE of the gate; docs/regressions.md §re-scans): the
    demo's 5 % step is found in that lane (tests/test_demo_full.py)."""

    configs: tuple[NightlyConfig, ...] = (
        NightlyConfig("deepseek-v3.1", "cpp", 65536),
        NightlyConfig("qwen3-coder-30b-a3b", "vpp", 65536),
        NightlyConfig("glm-5.2", "cpp", 65536),
    )
    nights: int = 24
    first_night: str = "2026-02-01"
    run_noise: float = 0.018
    regression: InjectedRegression | None = field(default_factory=InjectedRegression)
    seed: int = 0

    def night_epoch_ns(self, night: int) -> int:
        """The profiler clock's t=0 of a night's runs: first_night + night days, 02:00 UTC."""
        day = datetime.fromisoformat(self.first_night).replace(tzinfo=UTC)
        when = day + timedelta(days=night, hours=2)
        return int(when.timestamp()) * NANOS_PER_S

    def night_date(self, night: int) -> str:
        return (datetime.fromisoformat(self.first_night) + timedelta(days=night)).date().isoformat()

    def is_regressed(self, config: NightlyConfig, night: int) -> bool:
        r = self.regression
        return r is not None and self.configs[r.config] == config and night >= r.night

    def compute_factor(self, config: NightlyConfig, night: int) -> float:
        """The run-level compute factor of one night's run: noise, times the regression's."""
        text = f"{self.seed}/{config.model}/{config.schedule}/{config.seq_len}/night{night}"
        rng = np.random.default_rng(int(hashlib.sha256(text.encode()).hexdigest()[:8], 16))
        factor = math.exp(self.run_noise * float(rng.standard_normal()))
        if self.is_regressed(config, night):
            factor *= 1.0 + self.regression.slowdown  # type: ignore[union-attr]
        return factor

    def runs(self) -> list[tuple[NightlyConfig, int]]:
        """(configuration, night) of every nightly run, configuration-major."""
        return [(config, night) for config in self.configs for night in range(self.nights)]

    def expected_regression(self) -> dict[str, object] | None:
        """What `tracereplay regressions` should report: the configuration and first slow night."""
        r = self.regression
        if r is None or self.nights == 0 or not 0 < r.night < self.nights:
            return None
        c = self.configs[r.config]
        return {
            "model": c.model,
            "schedule": c.schedule,
            "seq_len": c.seq_len,
            "night": r.night,
            "date": self.night_date(r.night),
            "slowdown": r.slowdown,
        }
