"""PngWriter: PNGs rendered by worker processes, errors named, the page bundle made there."""

from __future__ import annotations

import pytest

from dashboards.png_render import script_bundle
from dashboards.png_writer import PngRenderError, PngWriter

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SPEC = {
    "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
    "data": {"values": [{"k": 0, "tau": 1.0}, {"k": 1, "tau": 2.0}]},
    "mark": "line",
    "encoding": {
        "x": {"field": "k", "type": "quantitative"},
        "y": {"field": "tau", "type": "quantitative"},
    },
}


@pytest.mark.slow  # two vl-convert worker processes (CI runs it: .ci/run)
def test_pngs_are_written_by_two_workers_and_the_bundle_is_vl_converts(tmp_path) -> None:
    paths = [tmp_path / f"chart-{i}.png" for i in range(5)]
    with PngWriter(processes=2) as writer:
        for path in paths:
            writer.submit(path, SPEC)
        bundle = writer.bundle()
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in paths)
    assert bundle == script_bundle() and "</script" not in bundle


def test_a_spec_vl_convert_refuses_is_named_and_the_others_still_written(tmp_path) -> None:
    bad = {"mark": "no_such_mark", "data": {"values": []}}
    refused = pytest.raises(PngRenderError, match=r"1 PNG\(s\) not rendered, first broken\.png")
    with refused, PngWriter(processes=1, bundle=False) as writer:
        writer.submit(tmp_path / "broken.png", bad)
        writer.submit(tmp_path / "fine.png", SPEC)
        assert writer.bundle() is None  # not asked for
    assert (tmp_path / "fine.png").read_bytes().startswith(PNG_MAGIC)
    assert not (tmp_path / "broken.png").exists()
