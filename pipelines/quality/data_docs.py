"""The HTML report of `tracereplay check --html DIR`: GX's Data Docs pages, offline.

Every GX validation result of the check run (one per suite and batch, and the custom checks'
counts) is rendered by GX itself (ValidationResultsPageRenderer + DefaultJinjaPageView, the
renderers GX's Data Docs site builder uses) into DIR/validations/<suite>[-<batch>].html, and
each suite file (pipelines/quality/suites) into DIR/expectations/<suite>.html
(ExpectationSuitePageRenderer).
DIR/index.html is ours: every check with its severity, kind, verdict, failing rows and example
rows, linking to the GX page of its suite (GX's own index page fills its table with JavaScript
from CDNs, so it would be empty offline).

Offline: GX's page template loads Bootstrap, jQuery, bootstrap-table, Font Awesome and Vega from
CDNs (unpkg, jsdelivr, cdnjs, stackpath). Those tags are removed, with every script (each needs
jQuery); GX's own stylesheet (data_docs_default_styles.css, shipped in the installed package) is
inlined with a small stylesheet of ours standing in for the Bootstrap classes the pages use. The
pages are static: nothing is fetched, nothing runs.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.quality.check_report import result_label, summary_line
from pipelines.quality.checks import CheckReport, CheckResult
from pipelines.quality.gx_suites import with_notes
from pipelines.quality.suite_files import suite_files

_EXTERNAL = re.compile(
    r"<script\b[^>]*>.*?</script>|<link\b[^>]*\bhref=\"https?://[^>]*>|<img\b[^>]*\bsrc=\"https?://[^>]*>",
    re.S | re.I,
)
_LOCAL_LINK = re.compile(r"<link\b[^>]*\bhref=\"(?!https?://)[^\"]*\"[^>]*>", re.I)
_CSS_URL = re.compile(r"url\(\s*['\"]?[^)]*\)", re.I)
_FOOTER = re.compile(r"<footer>.*?</footer>", re.S | re.I)
# GX's site layout nests a result 4 folders deep; ours is DIR/validations/<page>.html
_SITE_LINK = re.compile(r'href="(?:\.\./)+(index\.html|expectations/[^"]+)"')
_ANY_URL = re.compile(r"(?:src|href)=\"https?://", re.I)

_OFFLINE_CSS = """
body { font-family: sans-serif; color: #222; margin: 0 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eee; }
.card { border: 1px solid #ddd; border-radius: 4px; margin: 0.8em 0; }
.card-header { background: #f4f4f4; padding: 0.4em 0.8em; font-weight: bold; }
.card-body { padding: 0.4em 0.8em; }
.row { display: flex; flex-wrap: wrap; }
.col-12 { width: 100%; }
.d-none, .modal, .ge-walkthrough-modal, #ge-cta-footer, .navbar, .btn { display: none; }
.text-danger { color: #b42318; } .text-success { color: #1a7f37; }
.alert { padding: 0.5em; background: #f6f6f6; border: 1px solid #ddd; }
.fa-check-circle::before { content: "\\2714"; } .fa-times::before { content: "\\2718"; }
.fa-exclamation-triangle::before { content: "!"; }
"""

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #bbb; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eee; }
.pass { color: #1a7f37; } .error { color: #b42318; font-weight: bold; } .warning { color: #9a6700; }
code { font-size: 90%; }
"""


def _gx_stylesheet() -> str:
    import great_expectations

    path = (
        Path(great_expectations.__file__).parent
        / "render/view/static/styles/data_docs_default_styles.css"
    )
    return _CSS_URL.sub("none", path.read_text(encoding="utf-8")) if path.is_file() else ""


def offline(page: str, css: str) -> str:
    """A GX page with every external script, stylesheet and image removed (scripts all go: they
    need jQuery), local links to files not written (favicon) dropped, and `css` inlined."""
    page = _EXTERNAL.sub("", page)
    page = _LOCAL_LINK.sub("", page)
    page = _FOOTER.sub("", page)  # GX's newsletter form
    page = _CSS_URL.sub("none", page)  # the logo backgrounds GX's styles load from S3
    page = _SITE_LINK.sub(lambda m: f'href="../{m.group(1)}"', page)
    page = _ANY_URL.sub(lambda m: m.group(0).split("=")[0] + '="#', page)
    style = f"<style>{css}</style>"
    return page.replace("</head>", style + "</head>", 1) if "</head>" in page else style + page


def render_validation(result: Any) -> str:
    """One GX validation result as GX's Data Docs page (HTML, still with its CDN tags)."""
    from great_expectations.render.renderer import ValidationResultsPageRenderer
    from great_expectations.render.view import DefaultJinjaPageView

    document = ValidationResultsPageRenderer().render(result)
    return DefaultJinjaPageView().render(document)


def render_suite(data: dict) -> str:
    """One suite file as GX's Data Docs expectation-suite page."""
    import great_expectations as gx
    from great_expectations.render.renderer import ExpectationSuitePageRenderer
    from great_expectations.render.view import DefaultJinjaPageView

    document = ExpectationSuitePageRenderer().render(gx.ExpectationSuite(**data))
    return DefaultJinjaPageView().render(document)


def _suite_name(result: Any) -> str:
    return str(result.suite_name)


def _cell(value: object) -> str:
    return "null" if value is None else str(value)


def _examples_html(result: CheckResult) -> str:
    rows = result.example_dicts()
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in result.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row.values()) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _kind_label(result: CheckResult) -> str:
    item = result.expectation
    if item.gx_types:
        return "GX " + ", ".join(dict.fromkeys(item.gx_types))
    return "schema (GX count)" if item.kind == "schema" else "custom SQL (GX count)"


def _index(report: CheckReport, pages: dict[str, list[str]], title: str) -> str:
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(summary_line(report))}; written {datetime.now(UTC):%Y-%m-%d %H:%M} UTC."
        " Each check links to the Great Expectations validation result of its suite.</p>",
        "<table><tr><th>table</th><th>check</th><th>severity</th><th>result</th>"
        "<th>failing rows</th><th>GX expectation types</th><th>what it expects</th></tr>",
    ]
    for r in report.results:
        css = "pass" if r.passed else r.expectation.severity.value
        suite = r.expectation.suite or "custom_sql_and_schema"
        links = " ".join(
            f'<a href="{html.escape(p)}">{html.escape(Path(p).stem)}</a>' for p in pages[suite]
        )
        lines.append(
            f"<tr><td>{r.expectation.table}</td><td><code>{r.expectation.name}</code></td>"
            f'<td>{r.expectation.severity.value}</td><td class="{css}">{result_label(r)}</td>'
            f"<td>{r.failing}</td><td>{html.escape(_kind_label(r))}<br>{links}</td>"
            f"<td>{html.escape(r.expectation.doc)}</td></tr>"
        )
    lines.append("</table>")
    for r in report.results:
        if r.passed:
            continue
        lines.append(
            f"<h2>{html.escape(r.expectation.key)} ({r.expectation.severity.value}): "
            f"{r.failing} rows</h2><p>{html.escape(r.expectation.doc)}</p>{_examples_html(r)}"
        )
    lines.append("</body></html>")
    return "\n".join(lines)


def write_data_docs(report: CheckReport, out_dir: Path, title: str = "tracereplay check") -> Path:
    """Write the report into `out_dir` (created); returns the index page's path."""
    out_dir = Path(out_dir)
    (out_dir / "validations").mkdir(parents=True, exist_ok=True)
    (out_dir / "expectations").mkdir(exist_ok=True)
    css = _gx_stylesheet() + _OFFLINE_CSS
    pages: dict[str, list[str]] = defaultdict(list)
    validated = {_suite_name(r) for r in report.gx_results}
    for suite in suite_files():
        if suite.name in validated:
            page = offline(render_suite(with_notes(suite)), css)
            (out_dir / "expectations" / f"{suite.name}.html").write_text(page, encoding="utf-8")
    for result in report.gx_results:
        suite = _suite_name(result)
        n = len(pages[suite])
        name = f"validations/{suite}{f'-{n + 1}' if n else ''}.html"
        (out_dir / name).write_text(offline(render_validation(result), css), encoding="utf-8")
        pages[suite].append(name)
    index = out_dir / "index.html"
    index.write_text(_index(report, pages, title), encoding="utf-8")
    return index
