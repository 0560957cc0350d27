"""Golden fixture pairs: fixtures/rules/<CODE>/<case>.before.<ext> beside .after.<ext> and
.findings.txt. `MIGRATE_UPDATE=1 pytest` rewrites the expected files; review with git diff.
A pair with a `<case>.oracle.py` sidecar must still behave like its original before a
regenerated after is written (tests/fixture_oracle.py).

A case without an .after file must stay unchanged (negatives, manual-only findings).
Text (non-Python) cases name the file the checks see in their first segment after the case:
`pin.before.requirements.txt` is checked as `requirements.txt`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from migrate.fix.tidy import fix_source
from migrate.plan.units import WITH_UNSAFE, fixable
from migrate.scan.file_analysis import check_source

ROOT = Path(__file__).resolve().parent.parent
RULE_FIXTURES = ROOT / "fixtures" / "rules"
UPDATE = os.environ.get("MIGRATE_UPDATE") == "1"


@dataclass(frozen=True)
class Case:
    code: str
    name: str
    before: Path

    @property
    def checked_as(self) -> str:
        """The file name the checks see (matters for text rules: Dockerfile, requirements.txt)."""
        suffix = self.before.name.split(".before.", 1)[1]
        return suffix if suffix != "py" else f"{self.name}.py"

    def sibling(self, kind: str) -> Path:
        suffix = self.before.name.split(".before.", 1)[1]
        if kind == "findings":
            return self.before.with_name(f"{self.name}.findings.txt")
        return self.before.with_name(f"{self.name}.{kind}.{suffix}")

    def __str__(self) -> str:
        return f"{self.code}/{self.name}"


def all_cases(codes_prefix: str = "MIG") -> list[Case]:
    cases = []
    for folder in sorted(RULE_FIXTURES.glob(f"{codes_prefix}*")):
        for before in sorted(folder.glob("*.before.*")):
            name = before.name.split(".before.", 1)[0]
            cases.append(Case(folder.name, name, before))
    return cases


# Rules whose fixes form groups (a capture, its saves, its lowering): a case of one of them
# runs all of them, since a group is written only when all its members are selected.
GROUP_FAMILY = ("MIG101", "MIG102", "MIG103", "MIG201", "MIG203", "MIG204")


def group_family(code: str) -> list[str]:
    return list(GROUP_FAMILY) if code in GROUP_FAMILY else [code]


def with_group_members(findings, code: str):
    """The case's own findings and the other members of their groups (nothing else)."""
    groups = {f.autofix.group for f in findings if f.rule == code and f.autofix}
    return [
        f
        for f in findings
        if f.rule == code or (f.autofix is not None and f.autofix.group in groups - {None})
    ]


def read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def format_findings(findings) -> str:
    return "".join(f"{f.line}:{f.column} {f.rule} [{_kind(f)}] {f.message}\n" for f in findings)


def _kind(f) -> str:
    return f"{f.fix.value}, {f.applicability.value}" if f.autofix else f.fix.value


def run_case(case: Case) -> None:
    source = read(case.before)
    newline = "\r\n" if "\r\n" in source else "\n"

    def analyze(text: str):
        return with_group_members(
            check_source(text, group_family(case.code), case.checked_as), case.code
        )

    # 1-2. Findings of this code only, against the golden list.
    findings = analyze(source)
    got = format_findings([f for f in findings if f.rule == case.code])
    expected_path = case.sibling("findings")
    if UPDATE:
        write(expected_path, got)
    assert expected_path.exists(), f"{expected_path} missing (run with MIGRATE_UPDATE=1)"
    assert got == read(expected_path), f"findings differ for {case}"

    # 3. Fixes against the golden after-file (or unchanged when there is none).
    # Fixture pairs show every fix a rule writes, unsafe ones included.
    fixed = fix_source(case.checked_as, source, analyze, newline, allowed=WITH_UNSAFE)
    assert fixed.error is None, fixed.error
    after_path = case.sibling("after")
    if UPDATE:
        if fixed.fixed != source:
            # A regenerated snapshot must still behave like the original before it is written.
            check_behaviour_before_update(case, fixed.fixed)
            write(after_path, fixed.fixed)
        elif after_path.exists():
            after_path.unlink()
    if after_path.exists():
        assert fixed.fixed == read(after_path), f"fixed output differs for {case}"
        assert fixed.fixed != source, f"{case} has an .after file but nothing changed"
    else:
        assert fixed.fixed == source, f"{case} changed but has no .after file"

    # 4. Idempotent: nothing fixable is left, a second run changes nothing.
    left = [f for f in analyze(fixed.fixed) if fixable(f, WITH_UNSAFE)]
    assert not left, f"{case}: fixable findings remain"
    again = fix_source(case.checked_as, fixed.fixed, analyze, newline, allowed=WITH_UNSAFE)
    assert again.fixed == fixed.fixed


def check_behaviour_before_update(case: Case, after_text: str) -> None:
    """Run the behaviour oracle (tests/fixture_oracle.py) on a would-be `after`; a pair that
    stops agreeing fails here instead of becoming the new snapshot."""
    from tests import fixture_oracle

    if not fixture_oracle.oracle_path(case).exists():
        return
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        candidate = Path(folder) / f"{case.name}.after.py"
        write(candidate, after_text)
        try:
            fixture_oracle.check_pair(case, Path(folder) / "run", after=candidate)
        except fixture_oracle.KnownDefect:
            pass  # already listed in KNOWN_DEFECTS (a strict xfail of the oracle test)
