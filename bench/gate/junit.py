"""`compare --junit`: the comparison as JUnit XML, one test case per check, for CI test views."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from bench.gate.checks import Comparison, Status
from bench.gate.text import inconclusive_line
from bench.results.frame import now_iso


def junit_xml(comparison: Comparison) -> str:
    """One test case per check; the figures in a failure's message and in every case's output."""
    gated = [c for c in comparison.checks if c.status != Status.INFO]
    suite = ET.Element(
        "testsuite",
        name="ragbench compare",
        tests=str(len(comparison.checks)),
        failures=str(len(comparison.regressions)),
        errors="0",
        skipped=str(len(comparison.checks) - len(gated)),
        timestamp=now_iso(),
    )
    unsure = inconclusive_line(comparison)
    if comparison.notes or unsure:
        props = ET.SubElement(suite, "properties")
        for note in comparison.notes:
            ET.SubElement(props, "property", name="note", value=note)
        if unsure:
            ET.SubElement(props, "property", name="inconclusive", value=unsure.removeprefix("; "))
    for c in comparison.checks:
        case = ET.SubElement(
            suite, "testcase", classname=f"ragbench.{c.kind}" + (f".{c.source}" if c.source else ""), name=c.name
        )
        if c.inconclusive:  # a case property even when it passed: CI's test view shows it beside the case
            ET.SubElement(ET.SubElement(case, "properties"), "property", name="inconclusive", value=c.inconclusive)
        if c.status == Status.FAIL:
            kind = "inconclusive" if c.inconclusive else "regression"
            ET.SubElement(case, "failure", message=c.summary, type=kind).text = c.summary
        elif c.status == Status.INFO:
            ET.SubElement(case, "skipped", message=f"not gated: {c.not_gated or 'reported only'}").text = c.summary
        ET.SubElement(case, "system-out").text = c.summary
    root = ET.Element("testsuites", name="ragbench", tests=suite.attrib["tests"], failures=suite.attrib["failures"])
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
