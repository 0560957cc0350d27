"""docs/rules.md and the README rules table are generated from rules/*.yaml."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_the_rules_table_is_in_docs_rules_md_and_the_readme_links_it():
    """The README stays short: the table of every rule lives in docs/rules.md (generated)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/rules.md)" in readme
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for code, rule in current_rules().items():
        assert f"| [{code}](#{code.lower()}-{rule.name}) |" in page


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
    from migrate.scan.file_analysis import check_source

    page = render_rules_md(current_rules())
    assert "torch.jit.trace(" in page
    assert check_source(page, ["MIG501"], "docs/rules.md") == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert check_source(readme, ["MIG501"], "README.md") == []
    unmarked = page.replace("<!-- migrate: ignore[MIG501]", "<!-- a comment")
    assert len(check_source(unmarked, ["MIG501"], "docs/rules.md")) > 10


# --------------------------------------------------------------------------- README and docs/

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
MAX_README_LINES = 150


def test_the_readme_fits_on_a_screen_or_two():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= MAX_README_LINES


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_every_relative_link_resolves():
    """Each relative link of README.md and docs/**/*.md names a file or folder of the
    checkout, and an anchor into a Markdown page names one of its headings."""
    broken = []
    for page in PAGES:
        for link in _links(page):
            if re.match(r"[a-z]+:", link):
                continue  # https:, mailto:
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_link_check_catches_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A `code` title\n\n[x](other.md) [y](#a-code-title) `[z](no.md)`\n")
    assert _links(page) == ["other.md", "#a-code-title"]
    assert _anchors(page) == {"a-code-title"}


# The quick start: each `$ ` line runs, in order, in one shell, on a copy of the sample; what
# the README shows under it must be what the command prints. `...` alone stands for lines left
# out, a line ending in ` ...` for the rest of that line; the sample's real path is shown as
# /path/to/sample. The verify command needs torch (a slow test).
SHOWN_PATH = "/path/to/sample"


def quick_start() -> list[tuple[str, list[str]]]:
    text = README.read_text(encoding="utf-8")
    block = text.split("## Quick start", 1)[1].split("```console\n", 1)[1].split("\n```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def first_difference(expected: list[str], actual: list[str]) -> str | None:
    """None when `actual` shows `expected` (with its `...` cuts); else the first shown line
    that is not printed there, in that place."""
    i, gap = 0, False
    for line in expected:
        if line == "...":
            gap = True
            continue

        def same(real: str, line: str = line) -> bool:
            return real.startswith(line[:-4]) if line.endswith(" ...") else real == line

        while gap and i < len(actual) and not same(actual[i]):
            i += 1
        if i >= len(actual) or not same(actual[i]):
            return line
        i, gap = i + 1, False
    if not gap and i < len(actual):
        return f"(more output than shown: {actual[i]!r})"
    return None


def run_quick_start(tmp_path: Path, steps: list[tuple[str, list[str]]]):
    """Run the steps in one bash; each step's (exit code, stdout lines then stderr lines)."""
    checkout = tmp_path / "checkout"
    (checkout / "fixtures" / "repos").mkdir(parents=True)
    (checkout / "fixtures" / "repos" / "sample").symlink_to(ROOT / "fixtures" / "repos" / "sample")
    logs = tmp_path / "logs"
    logs.mkdir()
    script = [f'migrate() {{ "{sys.executable}" -m migrate "$@"; }}']
    for i, (command, _) in enumerate(steps):
        script.append(
            f'{{ {command}\n}} >"{logs}/{i}.out" 2>"{logs}/{i}.err"; echo $? >"{logs}/{i}.rc"'
        )
    from tests.scan_support import clean_env

    env = clean_env(tmp_path, PYTHONPATH=str(ROOT))
    subprocess.run(["bash", "-c", "\n".join(script)], cwd=checkout, env=env, timeout=900)
    sample = os.path.realpath(tmp_path / "sample")
    results = []
    for i in range(len(steps)):
        rc = int((logs / f"{i}.rc").read_text())
        printed = (logs / f"{i}.out").read_text() + (logs / f"{i}.err").read_text()
        results.append((rc, printed.replace(sample, SHOWN_PATH).splitlines()))
    return results


def _check_steps(tmp_path, steps):
    for (command, shown), (rc, printed) in zip(
        steps, run_quick_start(tmp_path, steps), strict=True
    ):
        assert rc in (0, 1), (command, rc, printed)  # 1: findings remain, as the rule says
        missing = first_difference(shown, printed)
        assert missing is None, f"$ {command}\nnot printed: {missing}\n" + "\n".join(printed)


def test_the_quick_start_prints_what_the_readme_shows(tmp_path):
    steps = [s for s in quick_start() if not s[0].startswith("migrate verify")]
    assert [c for c, _ in steps][1:] == [
        "migrate scan .",
        "migrate apply --dry-run .",
        "migrate apply --unsafe-fixes .",
    ]
    _check_steps(tmp_path, steps)


@pytest.mark.slow  # verify exports and lowers the sample's model (torch and ExecuTorch)
def test_the_quick_start_verify_step(tmp_path):
    pytest.importorskip("executorch")
    steps = quick_start()
    assert len(steps) == 5 and steps[-1][0].startswith("migrate verify")
    _check_steps(tmp_path, steps)


def test_the_quick_start_check_fails_on_a_wrong_line():
    printed = ["a", "b", "c long line", "d"]
    assert first_difference(["a", "...", "c long ...", "d"], printed) is None
    assert first_difference(["a", "c long line", "..."], printed) == "c long line"
    assert first_difference(["a", "...", "x"], printed) == "x"
    assert first_difference(["a", "b"], printed) == "(more output than shown: 'c long line')"


def test_the_readme_set_up_commands(tmp_path):
    """The first set-up command installs the tool and runs its demo (test_demo.py runs the
    demo in full, verify included); the second is exactly CI's (test_suite_setup.py)."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)\n```", text.split("## Quick start", 1)[0], re.S)
    assert blocks[0] == "pip install -e . && migrate demo"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert blocks[1] == ci


def test_every_migrate_command_the_readme_names_runs(tmp_path):
    """Inline `migrate ...` commands of the README (beyond the quick start) run on the sample."""
    from tests.scan_support import clean_env

    text = README.read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    inline = sorted({" ".join(c.split()) for c in re.findall(r"`(migrate [^`]+)`", prose)})
    runnable = [c for c in inline if c.split()[1] not in ("demo", "verify") and "CODE" not in c]
    assert "migrate explain MIG102" in runnable and "migrate rules" in runnable
    sample = tmp_path / "sample"
    shutil.copytree(ROOT / "fixtures" / "repos" / "sample" / "before", sample)
    for command in runnable:
        proc = subprocess.run(
            [sys.executable, "-m", *command.split()],
            cwd=sample,
            env=clean_env(tmp_path, PYTHONPATH=str(ROOT)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode in (0, 1), (command, proc.stderr)
