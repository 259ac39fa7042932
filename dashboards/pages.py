"""Self-contained HTML pages (the Vega, Vega-Lite and Vega-Embed JavaScript inline, from
vl-convert's bundle: they open offline, no CDN) and PNG export of each chart (vl-convert)."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

import altair as alt

from dashboards.png_render import script_bundle
from dashboards.png_writer import PngWriter


@dataclass(frozen=True)
class Section:
    """One chart on a page, with its heading and a note under it (n, test, aggregation)."""

    slug: str
    heading: str
    chart: alt.TopLevelMixin
    note: str = ""


_bundle: list[str] = []  # vega_bundle(), once made in this process


def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script (vl-convert's bundle; ~0.9 MB, ~2.5 s to make,
    made once per process, by a PngWriter's worker when there is one)."""
    if not _bundle:
        _bundle.append(script_bundle())
    return _bundle[0]


def png_writer() -> PngWriter:
    """A PngWriter whose first worker also makes vega_bundle() when this process has none yet."""
    return PngWriter(bundle=not _bundle)


CONTENTS_FROM = 6  # pages with more charts than this list them at the top

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;max-width:1200px}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}.note{color:#555;font-size:.9em}"
    "ul{columns:2;font-size:.9em}"
    "table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left}"
)

_EMBED = """
window.chartErrors = [];
const specs = %s;
for (const [id, spec] of Object.entries(specs)) {
  vegaEmbed('#' + id, spec, {renderer: 'svg', actions: false})
    .catch((error) => {
      window.chartErrors.push(String(error));
      const box = document.createElement('pre');
      box.className = 'chart-error';
      box.textContent = String(error);
      document.getElementById(id).appendChild(box);
      console.error(error);
    });
}
"""


def chart_spec(chart: alt.TopLevelMixin) -> dict:
    """The Vega-Lite spec of a chart, made once per chart for its page and its PNG. Altair's
    schema validation is left to the chart functions' tests (tests/dashboards): on a full site
    it took a fifth of the build (docs/dashboards.md); vl-convert still refuses a bad spec."""
    return chart.to_dict(validate=False)


def page_html(
    title: str, sections: list[Section], intro: str = "", specs: list[dict] | None = None
) -> str:
    """A page: title, intro paragraph (HTML), then each section's chart rendered by Vega-Embed
    (SVG renderer) from its spec inlined in the page (`specs`: the sections' specs when the
    caller has made them already)."""
    if specs is None:
        specs = [chart_spec(s.chart) for s in sections]
    specs = {f"chart-{s.slug}": spec for s, spec in zip(sections, specs, strict=True)}
    contents = ""
    if len(sections) > CONTENTS_FROM:  # a long page gets a list of its charts at the top
        items = "".join(
            f"<li><a href='#{s.slug}'>{html.escape(s.heading)}</a></li>" for s in sections
        )
        contents = (
            f"<details open><summary>{len(sections)} charts</summary><ul>{items}</ul></details>"
        )
    body = contents + "".join(
        f"<h2 id='{s.slug}'>{html.escape(s.heading)}</h2><div id='chart-{s.slug}'></div>"
        + (f"<p class='note'>{html.escape(s.note)}</p>" if s.note else "")
        for s in sections
    )
    payload = json.dumps(specs, default=str).replace("</", "<\\/")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f"<script>{vega_bundle()}</script></head><body>"
        f"<p><a href='index.html'>index</a></p><h1>{html.escape(title)}</h1>{intro}{body}"
        f"<script>{_EMBED % payload}</script></body></html>"
    )


def index_html(title: str, intro: str, links: list[tuple[str, str, str]]) -> str:
    """The index: intro (selection, freshness), then one row per page: link, what it shows."""
    rows = "".join(
        f"<tr><td><a href='{html.escape(href)}'>{html.escape(name)}</a></td>"
        f"<td>{html.escape(what)}</td></tr>"
        for name, href, what in links
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{intro}<table>{rows}</table></body></html>"
    )


def write_page(
    path: Path,
    title: str,
    sections: list[Section],
    intro: str = "",
    pngs: PngWriter | None = None,
) -> list[Path]:
    """Write the page and one PNG per section beside it (<page stem>-<slug>.png); returns the
    PNG paths. With `pngs` the PNGs are only queued there (written when it closes), else
    written before this returns."""
    if pngs is None:
        with png_writer() as own:
            return write_page(path, title, sections, intro, own)
    path.parent.mkdir(parents=True, exist_ok=True)
    paths, specs = [], []
    for section in sections:  # each PNG queued as soon as its spec is made
        paths.append(path.with_name(f"{path.stem}-{section.slug}.png"))
        specs.append(chart_spec(section.chart))
        pngs.submit(paths[-1], specs[-1])
    if not _bundle and (made := pngs.bundle()) is not None:  # made by a worker meanwhile
        _bundle.append(made)
    path.write_text(page_html(title, sections, intro, specs), encoding="utf-8")
    return paths
