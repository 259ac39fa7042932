"""HTML pages that open offline (the Vega, Vega-Lite and Vega-Embed JavaScript from vl-convert's
bundle, written once per site as BUNDLE_FILE beside its index and read by every page through a
relative path: no CDN) and PNG export of each chart (vl-convert)."""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass
from pathlib import Path

import altair as alt

from dashboards.known_data import known_spec
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


BUNDLE_FILE = "vega-bundle.js"
"""The one copy of the chart library of a site (~0.9 MB), beside its index.html."""


def write_bundle(root: Path) -> Path:
    """root/BUNDLE_FILE, written when missing or different from this version's bundle."""
    path = root / BUNDLE_FILE
    bundle = vega_bundle()
    if not path.exists() or path.stat().st_size != len(bundle.encode("utf-8")):
        root.mkdir(parents=True, exist_ok=True)
        path.write_text(bundle, encoding="utf-8")
    return path


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
    it took a fifth of the build (docs/dashboards.md); vl-convert still refuses a bad spec.
    Unknown values are left out of the inline data (dashboards/known_data.py)."""
    return known_spec(chart.to_dict(validate=False))


def page_html(
    title: str,
    sections: list[Section],
    intro: str = "",
    specs: list[dict] | None = None,
    bundle_src: str = BUNDLE_FILE,
    index_href: str | None = "index.html",
) -> str:
    """A page: title, intro paragraph (HTML), then each section's chart rendered by Vega-Embed
    (SVG renderer) from its spec inlined in the page (`specs`: the sections' specs when the
    caller has made them already). `bundle_src`: relative path of the site's chart library;
    `index_href`: relative path of the site's index (None: no index link)."""
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
        f"<script src='{html.escape(bundle_src)}'></script></head><body>"
        + (f"<p><a href='{html.escape(index_href)}'>index</a></p>" if index_href else "")
        + f"<h1>{html.escape(title)}</h1>{intro}{body}"
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
    root: Path | None = None,
    index_link: bool = True,
) -> list[Path]:
    """Write the page and one PNG per section beside it (<page stem>-<slug>.png); returns the
    PNG paths. With `pngs` the PNGs are only queued there (written when it closes), else
    written before this returns. `root`: the site's folder (default the page's), where the
    chart library and the index live; `index_link`: link the page to root/index.html."""
    if pngs is None:
        with png_writer() as own:
            return write_page(path, title, sections, intro, own, root, index_link)
    root = Path(root) if root is not None else path.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    paths, specs = [], []
    for section in sections:  # each PNG queued as soon as its spec is made
        paths.append(path.with_name(f"{path.stem}-{section.slug}.png"))
        specs.append(chart_spec(section.chart))
        pngs.submit(paths[-1], specs[-1])
    if not _bundle and (made := pngs.bundle()) is not None:  # made by a worker meanwhile
        _bundle.append(made)
    bundle = write_bundle(root)
    here = path.parent
    index = os.path.relpath(root / "index.html", here) if index_link else None
    page = page_html(
        title, sections, intro, specs, os.path.relpath(bundle, here).replace(os.sep, "/"), index
    )
    path.write_text(page, encoding="utf-8")
    return paths
