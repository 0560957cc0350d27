"""The share of findings the tests keep: `python benchmarks/fix_share.py --kept [REPO ...]`.

For each sample repository (fix_share.sample_repositories) with a runnable check, per intent
(drop, keep-scriptable): the sample is copied to a temporary folder and

    migrate apply --isolated --allow-dirty --unsafe-fixes --intent I --test CHECK .

runs there (cwd: the copy, the gate's repository root). Columns: `find` (findings of `migrate
scan --isolated`), `written` (what the same apply without `--test` would write, its "Would
fix N"), `kept` (its "Fixed N" with the gate: written minus what the gate reverted), the
share kept / findings, and `ok`: the check passes on the migrated copy and, where the sample
has a run.py, that program prints the same numbers as on the untouched copy.

The check of a sample, in this order: the `test` of its own pyproject.toml `[tool.migrate]`
table (what `apply --test-from-config` runs), a `tests/` folder (`python -m pytest -q`), a
`run.py` (`python run.py`, which writes its files to the cwd), or the command in CHECKS
(named with where it comes from). Without one the row says "-" and why. A sample in RECORDED
is first run under `migrate record -- CHECK` on the copy, as its README prescribes, so the
apply has the run's evidence.

fix_share.py runs it under `nice` (os.nice(10), inherited by every process it starts).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import tomllib
from fix_share import WOULD_FIX, migrate, share

from migrate.scan.discover import SKIP_DIRS

PYTEST = "python -m pytest -q -p no:cacheprovider"
# Samples whose program is named elsewhere than a run.py: (command, where it comes from).
CHECKS = {
    "sample": ("python -m sample.export_model .", "its Dockerfile's ENTRYPOINT"),
}
# Samples that have no check a Python run can make, and why.
NO_CHECK = {
    "native_mix": "its archives are read by C++/Objective-C/Java programs (server/, ios/, "
    "android/), which no Python check runs",
}
# Samples migrated the way their README says: `migrate record -- CHECK` first, so apply has
# the run's evidence (what only a run can answer); the others are applied from the source.
RECORDED = {"recorded"}
INTENTS = {"drop": "drop", "keep": "keep-scriptable"}
LONG_SUITES = {"graphlayers", "imageops", "wrappers", "recorded"}
FIXED = re.compile(r"Fixed (\d+) finding")
SKIP_COPY = shutil.ignore_patterns("__pycache__", ".scan-cache", ".pytest_cache", ".migrate")


def check_command(name: str, path: Path) -> tuple[str | None, str]:
    """(command, how it was found), or (None, why there is none)."""
    pyproject = path / "pyproject.toml"
    if pyproject.is_file():
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
        configured = table.get("migrate", {}).get("test")
        if configured:
            return configured, "[tool.migrate] test"
    if (path / "tests").is_dir():
        return PYTEST, "tests/"
    if (path / "run.py").is_file():
        return "python run.py", "run.py"
    if name in CHECKS:
        return CHECKS[name]
    if name in NO_CHECK:
        return None, NO_CHECK[name]
    return None, "no tests/ folder, run.py or [tool.migrate] test"


@dataclass
class Outcome:
    written: int = 0
    kept: int = 0
    reverted: list[tuple[str, list[str]]] = field(default_factory=list)  # (unit, tests)
    reverted_fixes: int = 0
    ok: bool | None = None
    why_not_ok: str = ""
    held: Counter = field(default_factory=Counter)
    error: str = ""
    unreported: list[str] = field(default_factory=list)  # `torch.jit` lines left, no finding

    @property
    def consistent(self) -> bool:
        """The gate's kept count is what was written less what it reverted."""
        return self.kept == self.written - self.reverted_fixes


def run_check(command: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env |= {"PYTHONPATH": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        ["sh", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def program_numbers(tree: Path, work: Path) -> tuple[dict | None, str]:
    """The JSON a sample's run.py prints last, run from `work`; None and why when it fails."""
    work.mkdir(parents=True, exist_ok=True)
    proc = run_check(f"python {tree / 'run.py'} {work}", tree)
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), ""
    except (IndexError, json.JSONDecodeError):
        return None, "run.py printed no JSON"


def same_numbers(after, before, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """Equal, floats within the tolerances the sample tests use (ExecuTorch rounds apart)."""
    if isinstance(before, dict):
        return (
            isinstance(after, dict)
            and sorted(after) == sorted(before)
            and all(same_numbers(after[k], v) for k, v in before.items())
        )
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(after) == len(before)
            and all(same_numbers(a, b) for a, b in zip(after, before, strict=True))
        )
    if isinstance(before, float) or isinstance(after, float):
        return math.isclose(after, before, rel_tol=rtol, abs_tol=atol)
    return after == before


def cause(finding: dict) -> str:
    """The reason a finding stays, with line numbers and quoted names left out so alike
    reasons group."""
    message = finding["message"]
    for marker in ("not rewritten: ", "not applied: "):
        if marker in message:
            message = message.rsplit(marker, 1)[1]
            break
    else:
        message = f"{finding['fix']}: {message}"
    message = re.sub(r":\d+(:\d+)?\b", ":N", message)
    message = re.sub(r"\bline \d+", "line N", message)
    # Names and code quoted in backticks vary per site; the reason does not.
    message = re.sub(r"`[^`]*`", "`…`", message)
    return f"{finding['rule']} {message}"


def findings_of(code: Path, tree: Path, *extra: str) -> list[dict]:
    # From the tree: paths relative to it, as in the gate's report.
    scan = migrate(
        code, "scan", "--isolated", "--no-cache", "--format", "json", *extra, ".", cwd=tree
    )
    return json.loads(scan.stdout)["findings"]


def would_write(code: Path, tree: Path, intent: str) -> int:
    """What `apply --unsafe-fixes --intent I` would write, without a test gate."""
    flags = ["--isolated", "--allow-dirty", "--unsafe-fixes", "--intent", intent]
    dry = migrate(code, "apply", "--dry-run", *flags, ".", cwd=tree)
    found = WOULD_FIX.search(dry.stdout)
    return int(found.group(1)) if found else 0


def measure_intent(
    code: Path, sample: Path, copy: Path, intent: str, command: str, record: bool = False
) -> Outcome:
    shutil.copytree(sample, copy, ignore=SKIP_COPY)
    if record:
        recorded = migrate(code, "record", "--", *shlex.split(command), cwd=copy)
        if recorded.returncode != 0:
            tail = (recorded.stderr.strip() or recorded.stdout.strip()).splitlines()
            return Outcome(error=f"migrate record failed: {(tail or ['(no output)'])[-1]}")
    out = Outcome(written=would_write(code, copy, intent))
    flags = ["--isolated", "--allow-dirty", "--unsafe-fixes", "--intent", intent]
    before = {
        (f["path"], f["line"], f["column"], f["rule"]): f
        for f in findings_of(code, copy, "--intent", intent)
    }
    if out.written == 0:
        # Nothing to write: the tree stays as it is, and nothing is left to gate.
        out.held.update(cause(f) for f in before.values())
        return out
    report = copy.parent / f"{copy.name}-test-report.json"
    applied = migrate(
        code, "apply", *flags, "--test", command, "--test-report", str(report), ".", cwd=copy
    )
    fixed = FIXED.search(applied.stdout)
    if applied.returncode not in (0, 1) or not report.is_file():
        out.error = (applied.stderr.strip().splitlines() or [applied.stdout.strip()])[-1]
        return out
    else:
        out.kept = int(fixed.group(1)) if fixed else 0
        gate = json.loads(report.read_text(encoding="utf-8"))
        kept_sites = {
            (f["path"], f["line"], f["column"], f["rule"]) for u in gate["kept"] for f in u["fixes"]
        }
        for unit in gate["reverted"]:
            first = unit["fixes"][0]
            where = f"{first['path']}:{first['line']} " + "+".join(
                dict.fromkeys(f["rule"] for f in unit["fixes"])
            )
            tests = [f"{b['test']}: {b['failure']}" for b in unit["broke"]]
            out.reverted.append((where, tests))
            out.reverted_fixes += len(unit["fixes"])
            for f in unit["fixes"]:
                out.held[f"{f['rule']} reverted by the gate: {tests[0] if tests else '?'}"] += 1
                kept_sites.add((f["path"], f["line"], f["column"], f["rule"]))
        for site, finding in before.items():
            if site not in kept_sites:
                out.held[cause(finding)] += 1
    # The gate's last run had every kept fix in place: the check passes after when it broke
    # nothing there (pytest: no test that passed before fails).
    last = gate["runs"][-1] if gate["runs"] else {}
    out.ok = out.kept == 0 or not last.get("broken")
    if not out.ok:
        out.why_not_ok = "; ".join(sorted(last["broken"]))
    out.unreported = unreported_jit_lines(code, copy, intent)
    return out


def jit_lines(text: str) -> list[int]:
    """The lines whose code (not a comment or docstring) names `torch.jit`."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr == "jit"
            and isinstance(node.value, ast.Name)
            and node.value.id == "torch"
        }
    )


def unreported_jit_lines(code: Path, tree: Path, intent: str) -> list[str]:
    """`path:line` of each `torch.jit` line left in `tree` that a re-scan does not report (the
    issue's bar: every line left is one a person must decide, with its reason)."""
    reported = {(f["path"], f["line"]) for f in findings_of(code, tree, "--intent", intent)}
    left = []
    for path in sorted(tree.rglob("*.py")):
        if SKIP_DIRS.intersection(path.relative_to(tree).parts[:-1]):
            continue  # what the scan never reads (a vendored site-packages, a venv)
        rel = path.relative_to(tree).as_posix()
        for number in jit_lines(path.read_text(encoding="utf-8", errors="replace")):
            if (rel, number) not in reported:
                left.append(f"{rel}:{number}")
    return left


def line(name: str, findings: int | str, check: str, results: dict[str, Outcome | str]) -> str:
    cells = []
    for key in INTENTS:
        r = results.get(key)
        if isinstance(r, Outcome) and not r.error:
            ok = "-" if r.ok is None else "yes" if r.ok else "NO"
            mark = "" if r.consistent else "!"
            total = findings if isinstance(findings, int) else 0
            cells.append(f"{r.written:>4} {r.kept:>4}{mark:1} {share(r.kept, total)} {ok:>3}")
        else:  # no check: what would be written, nothing kept
            cells.append(f"{r if isinstance(r, str) else '-':>4} {'-':>4}  {'   -':>4} {'-':>3}")
    return f"{name:<26} {findings:>4} {check:<20} " + "  ".join(cells)


def header() -> str:
    one = f"{'wrote':>4} {'kept':>4}  {'share':>4} {'ok':>3}"
    titles = "  ".join(f"{k + ':':<23}" for k in INTENTS)
    return (
        f"{'':<26} {'':>4} {'':<20} {titles}\n"
        f"{'repository':<26} {'find':>4} {'check':<20} " + "  ".join([one] * len(INTENTS))
    )


def measure_kept(targets, wanted, code: Path, verbose: bool = True) -> dict:
    """Print the table; returns {name: {"findings", "check", intent key: Outcome}}."""
    print(header(), flush=True)
    rows: dict[str, dict] = {}
    totals = {"findings": 0, **{k: [0, 0] for k in INTENTS}}
    notes: list[str] = []
    scratch = Path(tempfile.mkdtemp(prefix="migrate-kept-share-"))
    try:
        # The samples with the longest suites last: a run cut short has the others.
        for name, path in sorted(targets, key=lambda t: t[0] in LONG_SUITES):
            if wanted and name not in wanted:
                continue
            findings = len(findings_of(code, path))
            command, how = check_command(name, path)
            row: dict = {"findings": findings, "check": how}
            rows[name] = row
            if command is None:
                for key, intent in INTENTS.items():
                    row[key] = f"{would_write(code, path, intent)}"
                # What stays without a gate: every finding drop leaves unfixed.
                row["held"] = Counter(
                    cause(f)
                    for f in findings_of(code, path, "--intent", "drop")
                    if f["fix"] != "auto" or f.get("applicability") == "display"
                )
                print(line(name, findings, "-", row), flush=True)
                notes.append(f"{name}: no check: {how}")
                continue
            numbers = None
            if (path / "run.py").is_file():
                pristine = scratch / name.replace("/", "_") / "pristine"
                shutil.copytree(path, pristine, ignore=SKIP_COPY)
                numbers, why = program_numbers(pristine, pristine.parent / "work-pristine")
                if numbers is None:
                    notes.append(f"{name}: run.py fails on the untouched copy: {why}")
            for key, intent in INTENTS.items():
                copy = scratch / name.replace("/", "_") / key
                r = measure_intent(code, path, copy, intent, command, name in RECORDED)
                if r.ok and r.kept and numbers is not None:
                    now, why = program_numbers(copy, copy.parent / f"work-{key}")
                    if now is None or not same_numbers(now, numbers):
                        r.ok = False
                        r.why_not_ok = f"run.py: {why or 'other numbers'}"
                row[key] = r
                if r.error:
                    notes.append(f"{name} [{intent}]: apply --test failed: {r.error}")
                    continue
                totals[key][0] += r.written
                totals[key][1] += r.kept
                for where, tests in r.reverted:
                    notes.append(f"{name} [{intent}]: reverted {where}: broke {'; '.join(tests)}")
                if r.ok is False:
                    notes.append(f"{name} [{intent}]: the check fails after: {r.why_not_ok}")
                if r.unreported:
                    notes.append(
                        f"{name} [{intent}]: `torch.jit` left with no finding: "
                        + ", ".join(r.unreported)
                    )
                if not r.consistent:
                    notes.append(
                        f"{name} [{intent}]: kept {r.kept} != written {r.written} - "
                        f"reverted {r.reverted_fixes}"
                    )
            totals["findings"] += findings
            print(line(name, findings, f"{how}"[:20], row), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = {k: Outcome(written=w, kept=kept) for k, (w, kept) in ((k, totals[k]) for k in INTENTS)}
    print(line("TOTAL (with a check)", totals["findings"], "", total))
    if verbose:
        for note in notes:
            print(note)
        print_held(rows)
    return rows


def print_held(rows: dict, below: float = 0.8) -> None:
    """Why the findings of each sample under `below` under drop stay, grouped by cause."""
    for name, row in rows.items():
        r = row.get("drop")
        if isinstance(r, str):  # no check: what the dry run leaves
            fixed, held, how = int(r), row["held"], "written (no check)"
        elif isinstance(r, Outcome) and not r.error:
            fixed, held, how = r.kept, r.held, "kept"
        else:
            continue
        if not row["findings"] or fixed / row["findings"] >= below:
            continue
        print(f"\n{name}: {fixed}/{row['findings']} {how} under drop; what stays, by cause:")
        for reason, n in held.most_common():
            print(f"  {n:>3}  {reason}")


if __name__ == "__main__":
    sys.exit("run it as: python benchmarks/fix_share.py --kept [REPO ...]")
