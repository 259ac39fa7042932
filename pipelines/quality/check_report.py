"""Renderings of a check report: a text table that fits 120 columns, JUnit XML (one test case per
expectation, so GitLab, Jenkins and GitHub list each expectation as a test), and a JSON-ready
dict. The HTML report is GX's Data Docs (pipelines/quality/data_docs.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from pipelines.quality.checks import CheckReport, CheckResult

WIDTH = 120
_EXAMPLE_WIDTH = 52


def _cell(value: object) -> str:
    """A value of an example row as text: a missing one reads '(missing)', not 'null'."""
    return "(missing)" if value is None else str(value)


def example_text(result: CheckResult, limit: int = 2) -> str:
    """The first example rows, as `col=value` pairs."""
    rows = result.example_dicts()[:limit]
    return " | ".join(", ".join(f"{k}={_cell(v)}" for k, v in row.items()) for row in rows)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def result_label(result: CheckResult) -> str:
    return "pass" if result.passed else "FAIL"


def format_table(report: CheckReport, failures_only: bool = False) -> str:
    """One line per expectation: table, expectation, severity, result, failing rows, examples."""
    rows = [r for r in report.results if not (failures_only and r.passed)]
    header = ("table", "expectation", "kind", "severity", "result", "failing", "example rows")
    cells = [
        (
            r.expectation.table,
            r.expectation.name,
            r.expectation.kind.value,
            r.expectation.severity.value,
            result_label(r),
            str(r.failing),
            example_text(r),
        )
        for r in rows
    ]
    widths = [
        max(len(h), *(len(c[i]) for c in cells)) if cells else len(h)
        for i, h in enumerate(header[:-1])
    ]
    room = max(20, WIDTH - sum(widths) - 2 * len(widths))
    lines = [
        "  ".join(h.ljust(w) for h, w in zip(header[:-1], widths, strict=True)) + "  " + header[-1]
    ]
    for c in cells:
        fixed = "  ".join(v.ljust(w) for v, w in zip(c[:-1], widths, strict=True))
        lines.append((fixed + "  " + _clip(c[-1], room)).rstrip())
    return "\n".join(lines)


def summary_line(report: CheckReport) -> str:
    n = len(report.results)
    passed = n - len(report.errors) - len(report.warnings)
    return (
        f"{n} expectations over {report.runs_checked} runs: {passed} passed,"
        f" {len(report.errors)} errors, {len(report.warnings)} warnings; {report.duration_s:.1f} s"
    )


def as_dict(report: CheckReport) -> dict[str, object]:
    return {
        "ok": report.ok,
        "runs_checked": report.runs_checked,
        "duration_s": round(report.duration_s, 3),
        "results": [
            {
                "table": r.expectation.table,
                "expectation": r.expectation.name,
                "severity": r.expectation.severity.value,
                "kind": r.expectation.kind.value,
                "gx_types": list(dict.fromkeys(r.expectation.gx_types)),
                "doc": r.expectation.doc,
                "passed": r.passed,
                "failing": r.failing,
                "examples": [
                    {k: None if v is None else str(v) for k, v in row.items()}
                    for row in r.example_dicts()
                ],
            }
            for r in report.results
        ],
    }


def to_junit(report: CheckReport) -> str:
    """JUnit XML: a suite per table, a test case per expectation; an error-severity failure is a
    <failure>, a warning failure passes with the finding in <system-out>."""
    root = ET.Element(
        "testsuites",
        name="tracereplay check",
        tests=str(len(report.results)),
        failures=str(len(report.errors)),
        time=f"{report.duration_s:.3f}",
    )
    tables = list(dict.fromkeys(r.expectation.table for r in report.results))
    for table in tables:
        members = [r for r in report.results if r.expectation.table == table]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=table,
            tests=str(len(members)),
            failures=str(sum(r.blocks for r in members)),
        )
        for r in members:
            case = ET.SubElement(
                suite, "testcase", classname=f"tracereplay.check.{table}", name=r.expectation.name
            )
            if r.passed:
                continue
            message = f"{r.failing} rows break: {r.expectation.doc}"
            detail = "\n".join(
                ", ".join(f"{k}={_cell(v)}" for k, v in row.items()) for row in r.example_dicts()
            )
            if r.blocks:
                failure = ET.SubElement(case, "failure", message=message, type="error")
                failure.text = detail
            else:
                out = ET.SubElement(case, "system-out")
                out.text = f"warning: {message}\n{detail}"
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def format_failures(report: CheckReport, rows: int = 3) -> str:
    """Under the table: each failing expectation with its first example rows in full."""
    lines = []
    for r in report.results:
        if r.passed:
            continue
        lines.append(f"{r.expectation.key} ({r.expectation.severity.value}, {r.failing} rows):")
        for row in r.example_dicts()[:rows]:
            text = ", ".join(f"{k}={_cell(v)}" for k, v in row.items())
            lines.append("  " + _clip(text, WIDTH - 2))
    return "\n".join(lines)
