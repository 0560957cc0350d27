"""docs/rules.md and the README rules table are generated from rules/*.yaml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from migrate.cli.docs import (
    TABLE_END,
    TABLE_START,
    generated_files,
    render_rules_md,
    replace_table,
    write_docs,
)
from migrate.registry import _load_rule, all_rules, rule_files

ROOT = Path(__file__).resolve().parent.parent


def current_rules():
    # Read the YAML afresh: rules are added while the suite runs elsewhere in the checkout.
    rules = [_load_rule(Path(p), data) for p, data in rule_files().items()]
    return {r.code: r for r in rules}


def test_generated_docs_are_up_to_date():
    stale = [f.path for f in generated_files(ROOT, current_rules()) if f.stale]
    assert not stale, f"stale generated docs: {stale}; run `migrate docs`"


def test_rules_md_documents_every_rule():
    rules = current_rules()
    text = render_rules_md(rules)
    for rule in rules.values():
        assert f"### {rule.code} {rule.name}\n" in text
        assert f"](#{rule.code.lower()}-{rule.name})" in text
        if rule.use_instead:
            assert rule.use_instead in text


def test_readme_has_the_rules_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert TABLE_START in readme and TABLE_END in readme
    for code in current_rules():
        assert f"| [{code}](docs/rules.md#{code.lower()}-" in readme


def test_docs_command_writes_and_checks(tmp_path):
    (tmp_path / "README.md").write_text(
        f"# x\n\n{TABLE_START}\nold\n{TABLE_END}\n\nrest\n", encoding="utf-8"
    )

    def docs(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "migrate", "docs", "--root", str(tmp_path), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    proc = docs("--check")
    assert proc.returncode == 1
    assert "rules.md" in proc.stderr and "README.md" in proc.stderr
    proc = docs()
    assert proc.returncode == 0
    assert (tmp_path / "docs" / "rules.md").read_text() == render_rules_md(all_rules())
    readme = (tmp_path / "README.md").read_text()
    assert "old" not in readme and readme.endswith(f"{TABLE_END}\n\nrest\n")
    assert "| [MIG101](docs/rules.md#mig101-" in readme
    assert docs("--check").returncode == 0
    # Hand edits make it stale again.
    with (tmp_path / "docs" / "rules.md").open("a") as f:
        f.write("hand edit\n")
    assert docs("--check").returncode == 1


def test_replace_table_needs_both_markers():
    assert replace_table("no markers", "T") is None
    assert replace_table(f"a {TABLE_END} {TABLE_START} b", "T") is None
    assert (
        replace_table(f"a{TABLE_START}x{TABLE_END}b", "T\n") == f"a{TABLE_START}\nT\n{TABLE_END}b"
    )


def test_write_docs_only_touches_stale_files(tmp_path):
    files = generated_files(tmp_path, current_rules())
    assert [f.path.name for f in files] == ["rules.md"]
    assert write_docs(files) == [tmp_path / "docs" / "rules.md"]
    assert write_docs(generated_files(tmp_path, current_rules())) == []


def test_rule_sections_are_short():
    """What it does, why, use instead and fix safety: at most three sentences and a few
    lines each (issue 30); the long form is the rule's `details`, collapsed in docs/rules.md."""
    from migrate.cli.docs import MAX_SECTION_CHARS, MAX_SENTENCES, SHORT_SECTIONS, sentences

    long = []
    for rule in current_rules().values():
        for field in SHORT_SECTIONS:
            text = " ".join(getattr(rule, field).split())
            n = len(sentences(text))
            if n > MAX_SENTENCES or len(text) > MAX_SECTION_CHARS:
                long.append((rule.code, field, n, len(text)))
    assert not long, long


def test_details_are_collapsed_in_rules_md():
    rules = current_rules()
    text = render_rules_md(rules)
    with_details = [r for r in rules.values() if r.details]
    assert with_details
    for rule in with_details:
        head = f"<details><summary>Details: {rule.code} in full</summary>"
        assert text.count(head) == 1
        section = text.split(f"### {rule.code} ", 1)[1].split("\n### ", 1)[0]
        section = section.split("\n## ", 1)[0]
        assert head in section and section.rstrip().endswith("</details>")


def test_the_writer_reader_paragraph_is_one_linked_page():
    page = ROOT / "docs" / "rules" / "artifact-flow.md"
    assert page.is_file()
    for code in ("MIG201", "MIG202", "MIG203", "MIG204", "MIG205"):
        rule = current_rules()[code]
        assert "(rules/artifact-flow.md)" in rule.fix_safety, code
        assert "The planner links every writer" not in rule.fix_safety + rule.details, code


def test_the_project_docs_show_torchscript_only_on_purpose():
    """The rules' examples show TorchScript on purpose: the generated page marks each of them
    for MIG501, so a scan of this repository's own docs and README reports none of them,
    while an example without the mark is still found."""
    from migrate.scan.engine import check_source

    page = render_rules_md(current_rules())
    assert "torch.jit.trace(" in page
    assert check_source(page, ["MIG501"], "docs/rules.md") == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert check_source(readme, ["MIG501"], "README.md") == []
    unmarked = page.replace("<!-- migrate: ignore[MIG501]", "<!-- a comment")
    assert len(check_source(unmarked, ["MIG501"], "docs/rules.md")) > 10
