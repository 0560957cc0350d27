"""SARIF 2.1.0 output (validated in tests against the official schema)."""

from __future__ import annotations

import json
from urllib.parse import quote

from migrate import __version__
from migrate.findings import FixKind, ScanResult
from migrate.registry import all_rules
from migrate.report.intent import intent_summary

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


def artifact_uri(path: str) -> str:
    """A SARIF artifactLocation.uri: relative paths percent-encoded, absolute ones file:// URIs."""
    if path.startswith("/"):
        return "file://" + quote(path)
    return quote(path)


def render(result: ScanResult, color: bool = False) -> str:
    rules = all_rules()
    used = sorted({f.rule for f in result.findings})
    index = {code: i for i, code in enumerate(used)}
    driver_rules = []
    for code in used:
        rule = rules[code]
        driver_rules.append(
            {
                "id": code,
                "name": rule.name,
                "shortDescription": {"text": rule.title},
                "fullDescription": {"text": rule.why or rule.title},
                "help": {"text": rule.use_instead or rule.title},
                "properties": {"fix": rule.fix.value},
            }
        )
    results = []
    for f in result.findings:
        results.append(
            {
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": "warning" if f.fix is FixKind.MANUAL else "error",
                "message": {"text": f.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": artifact_uri(f.path)},
                            "region": {
                                "startLine": f.line,
                                "startColumn": f.column,
                                "endLine": f.end_line,
                                "endColumn": f.end_column,
                            },
                        }
                    }
                ],
                "properties": {
                    "symbol": f.symbol,
                    "fix": f.fix.value,
                    "applicability": f.applicability.value if f.applicability else None,
                },
            }
        )
    notifications = [
        {
            "level": "error",
            "message": {"text": e.message},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(e.path)}}}
            ],
        }
        for e in result.errors
    ]
    run: dict = {
        "tool": {
            "driver": {
                "name": "torchscript-migrate",
                "version": __version__,
                "informationUri": "https://pypi.org/project/torchscript-migrate/",
                "rules": driver_rules,
            }
        },
        "results": results,
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
        "properties": intent_summary(result),
    }
    doc = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2) + "\n"
