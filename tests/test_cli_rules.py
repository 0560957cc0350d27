"""`migrate rules` and `migrate explain` print the rule data from rules/*.yaml."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from migrate.registry import all_rules


def migrate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, timeout=60
    )


def test_rules_lists_every_rule_with_its_fix_kind_and_title():
    proc = migrate("rules")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    rules = all_rules()
    assert len(lines) == len(rules)
    for line, rule in zip(lines, rules.values(), strict=True):
        code, name, rest = line.split(maxsplit=2)
        assert (code, name) == (rule.code, rule.name)
        fix, title = rest[:15].strip(), rest[15:].strip()
        assert (fix, title) == (rule.fix_label, rule.title)
    # Each auto rule says what its fixes promise.
    assert "MIG111  jit-annotate" in proc.stdout and "auto (safe)" in proc.stdout
    assert "auto (unsafe)" in proc.stdout


def test_rules_json():
    proc = migrate("rules", "--format", "json")
    doc = json.loads(proc.stdout)
    assert [r["code"] for r in doc] == sorted(all_rules())
    assert doc[0].keys() == {"code", "name", "fix", "applicability", "title"}
    by_code = {r["code"]: r for r in doc}
    assert by_code["MIG111"]["applicability"] == "safe"
    assert by_code["MIG102"]["applicability"] == "unsafe"
    assert by_code["MIG117"]["applicability"] is None  # manual: nothing to write
    proc = migrate("rules", "--format", "yaml")
    assert proc.returncode == 2
    assert "--format must be text or json" in proc.stderr


@pytest.mark.parametrize("key", ["MIG102", "mig102", "jit-trace-to-export"])
def test_explain_prints_the_rule_documentation(key):
    rule = all_rules()["MIG102"]
    proc = migrate("explain", key)
    assert proc.returncode == 0
    out = proc.stdout
    assert out.startswith("# MIG102 jit-trace-to-export\n")
    for heading in ("## What it does", "## Why", "## Use instead", "## Fix safety", "## Example"):
        assert heading in out
    assert " ".join(rule.fix_safety.split()) in " ".join(out.split())
    assert rule.example_before in out and rule.example_after in out


def test_explain_unknown_rule():
    proc = migrate("explain", "MIG999")
    assert proc.returncode == 2
    assert "unknown rule MIG999" in proc.stderr
