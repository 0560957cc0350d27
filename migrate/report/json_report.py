"""JSON output; the schema is documented in docs/json-schema.md (version 1)."""

from __future__ import annotations

import json
from collections import Counter

from migrate.findings import ScanResult
from migrate.report.intent import intent_summary

SCHEMA_VERSION = 1


def summary(result: ScanResult) -> dict:
    by_rule = Counter(f.rule for f in result.findings)
    by_fix = Counter(f.fix.value for f in result.findings)
    return {
        "files_scanned": result.files_seen,
        "files_parsed": result.files_parsed,
        "findings": len(result.findings),
        "errors": len(result.errors),
        "by_rule": dict(sorted(by_rule.items())),
        "by_fix": {k: by_fix.get(k, 0) for k in ("auto", "assisted", "manual")},
        **intent_summary(result),
        **({"evidence": result.evidence} if result.evidence is not None else {}),
    }


def render(result: ScanResult, color: bool = False) -> str:
    doc = {
        "version": SCHEMA_VERSION,
        "tool": "torchscript-migrate",
        "findings": [f.to_dict() for f in result.findings],
        "summary": summary(result),
        "errors": [e.to_dict() for e in result.errors],
    }
    return json.dumps(doc, indent=2) + "\n"
