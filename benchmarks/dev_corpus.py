"""The tool on the development corpus: whole git repositories at fixed commits.

    python benchmarks/dev_corpus.py [--baseline CHECKOUT] [--tests] [--json FILE] [DIR ...]

Each DIR is a corpus tree laid out by shared/tools/corpus-tree.sh (default: the folders of
CORPUS under ../corpus beside this checkout). A tree named in CORPUS must be at its commit
(HEAD is that commit, or the layout commit corpus-tree.sh made of it) with a clean work
tree; otherwise the run stops with one line. The trees are never written: every command runs
on a copy under a temporary folder.

Per repository, for this checkout (and `--baseline`'s, side by side, `before -> after`):
- `find`: the findings of `migrate scan --isolated --no-cache --format json`;
- `none` / `drop` / `keep`: the "Would fix N" of `migrate apply --dry-run --isolated
  --no-cache --unsafe-fixes [--intent drop|keep-scriptable]`, and the share under drop;
- `fixed`: the "Fixed N" of a real `apply --intent drop --unsafe-fixes` on a copy, and
  `left`, the findings a scan under drop still reports on that copy, grouped by cause (the
  reason after "not rewritten:" or "under intent drop it stays:", numbers, paths and quoted
  names replaced);
- `jit lines`: lines matching `torch\\.jit\\.|is_scripting\\(` in .py files before and after
  that apply; `unparsable`: files the apply left as invalid Python.

With `--tests`, for this checkout only, for a repository with a test subset in CORPUS (its own virtual environment
and pytest command, run with the copy as the working folder):
- the modules the apply changed are imported in that environment before and after the
  apply; a module that imported before and fails after is listed with its error;
- the subset runs on the untouched copy, then `migrate apply --intent drop --unsafe-fixes
  --test CMD --test-report FILE` runs on a fresh copy and the subset runs again on its
  result: tests passing before / after, tests going from pass to fail (must be none) and
  from pass to skipped (a test the apply marked as only checking TorchScript), the
  fixes the gate kept and reverted, and the tests the fixes broke before the gate reverted
  them (the gate's first trial, every fix in place).

`--json FILE` writes the rows; `--report FILE` prints the tables of rows written before. A benchmark: it prints, it asserts nothing, and it runs niced.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT.parent / "corpus"
VENVS = Path("/work/venvs")
PYTEST = "-m pytest -q -p no:cacheprovider"


@dataclass(frozen=True)
class Subset:
    """A repository's own tests that run here: the environment and the pytest arguments."""

    venv: str
    args: str
    env: str = ""  # variables set before the command, `NAME=value ...`

    @property
    def python(self) -> Path:
        return VENVS / self.venv / "bin" / "python"

    @property
    def command(self) -> str:
        return " ".join(filter(None, [self.env, f"{self.python} {PYTEST}", self.args]))


@dataclass(frozen=True)
class Repo:
    slug: str
    commit: str
    subset: Subset | None
    why_no_subset: str = ""


# Offline: a test that reaches for a hub fails at once instead of after minutes of retries.
OFFLINE = "HF_HUB_OFFLINE=1"
CORPUS = {
    "torchani": Repo(
        "aiqm/torchani",
        "800dcdd368bed6952e79c745bc23ef5ba4f81dfa",
        Subset(
            "torchani",
            "tests/test_utils.py tests/test_grad_module.py tests/test_aev.py "
            "tests/test_dispersion.py tests/test_nn.py tests/test_electro.py",
            f"{OFFLINE} TORCHANI_NO_WARN_EXTENSIONS=1",
        ),
    ),
    "fairseq": Repo(
        "facebookresearch/fairseq",
        "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99",
        Subset(
            "fairseq",
            "tests/test_export.py tests/test_sequence_generator.py tests/test_lstm_jitable.py "
            "tests/test_rotary_positional_embedding.py",
            OFFLINE,
        ),
    ),
    "speechbrain": Repo(
        "speechbrain/speechbrain",
        "9c826ef3937bac885c8a6ca86c6889a30f256fb5",
        Subset(
            "speechbrain",
            " ".join(
                f"tests/unittests/test_{name}.py"
                for name in (
                    "CNN RNN activations dropout embedding features linear multi_mic "
                    "normalization pooling quaternion_networks"
                ).split()
            ),
            OFFLINE,
        ),
    ),
    "nequip": Repo(
        "mir-group/nequip",
        "e07489d4c55535f758501f0536e76d1b59caed38",
        Subset(
            "nequip",
            "tests/unit/nn tests/unit/model/test_model_utils.py tests/unit/utils "
            "--deselect tests/unit/nn/test_mlp.py",
            OFFLINE,
        ),
    ),
    "asteroid": Repo(
        "asteroid-team/asteroid",
        "92c8d83a9dbe7c3afd1cd097e31254e0b4f82881",
        Subset("asteroid", "tests/jit", OFFLINE),
    ),
    "segmentation_models.pytorch": Repo(
        "qubvel-org/segmentation_models.pytorch",
        "5006616357631a48c7c8e11977cf5abb00803590",
        Subset(
            "smp",
            "tests/encoders/test_smp_encoders.py tests/encoders/test_torchvision_encoders.py "
            "tests/base -m 'not (compile or logits_match)'",
            OFFLINE,
        ),
    ),
}

INTENTS = {"none": [], "drop": ["--intent", "drop"], "keep": ["--intent", "keep-scriptable"]}
WOULD_FIX = re.compile(r"Would fix (\d+) finding")
FIXED = re.compile(r"Fixed (\d+) finding")
JIT_LINE = re.compile(r"torch\.jit\.|is_scripting\(")
# The reason a finding stays comes after the last of these in the finding's message.
HELD_MARKER = re.compile(r"(?:under intent drop it stays|not rewritten): ", re.IGNORECASE)
SKIP_COPY_DIRS = {".git", "__pycache__", ".pytest_cache", ".migrate", ".scan-cache"}


# ---------------------------------------------------------------- pure helpers (tested)


def normalise_reason(message: str) -> str:
    """The reason a finding stays, alike across sites: the text after the last held marker
    (else the whole message), with paths, numbers and quoted names replaced."""
    message = HELD_MARKER.split(message)[-1]
    message = re.sub(r"`([^`]*)`", _quoted, message)
    message = re.sub(r"(?<![\w.])[\w./-]*\w\.py(:\d+)*", "PATH", message)
    message = re.sub(r"(?<![\w`])\d+(\.\d+)?(?![\w`])", "N", message)
    return message.strip().rstrip(".")


def _quoted(match: re.Match) -> str:
    # A torch API names the construct, which is the cause; anything else names a site.
    text = match.group(1)
    return match.group(0) if text.startswith(("torch.", "@torch.", "is_scripting")) else "`…`"


def group_causes(findings: list[dict]) -> list[tuple[int, str, str]]:
    """(count, rules, reason) per normalised reason, most frequent first."""
    counts: Counter[str] = Counter()
    rules: dict[str, set[str]] = {}
    for f in findings:
        reason = normalise_reason(f["message"])
        counts[reason] += 1
        rules.setdefault(reason, set()).add(f["rule"])
    return [(n, ",".join(sorted(rules[r])), r) for r, n in counts.most_common()]


def count_jit_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if JIT_LINE.search(line))


def pair(before, after) -> str:
    """One cell: the value, or `before -> after` when a baseline was measured."""
    show = ["-" if v is None else str(v) for v in (before, after)]
    return show[1] if before is _ABSENT else f"{show[0]} -> {show[1]}"


_ABSENT = object()


def share(part: int | None, total: int | None) -> str:
    if part is None or not total:
        return "-"
    return f"{100 * part / total:.0f}%"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table, columns padded to their widest cell."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells):
        return "| " + " | ".join(f"{c!s:<{w}}" for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def module_name(rel: str) -> str | None:
    """The dotted module of a repository file that importing cannot run as a script: inside
    a package (every folder up to the top has __init__.py, checked by the caller) or a test
    file; None for anything else."""
    parts = Path(rel).with_suffix("").parts
    if not parts or not rel.endswith(".py"):
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts else None


# ---------------------------------------------------------------- running the tool


@dataclass
class Measure:
    findings: int | None = None
    would_fix: dict[str, int | None] = field(default_factory=dict)
    fixed: int | None = None
    left: int | None = None
    held: list[tuple[int, str, str]] = field(default_factory=list)
    left_findings: list[dict] = field(default_factory=list)  # path, line, rule, message
    jit_before: int = 0
    jit_after: int | None = None
    changed: list[str] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)
    import_failures: dict[str, str] = field(default_factory=dict)
    tests: dict | None = None
    seconds: float = 0.0
    error: str = ""


def migrate(code: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(code), "MIGRATE_CACHE_DIR": "/tmp/dev-corpus-cache"}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def last_line(proc: subprocess.CompletedProcess) -> str:
    lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def scan(code: Path, tree: Path, *extra: str) -> list[dict]:
    proc = migrate(
        code, "scan", "--isolated", "--no-cache", "--format", "json", *extra, ".", cwd=tree
    )
    try:
        return json.loads(proc.stdout)["findings"]
    except (json.JSONDecodeError, KeyError):
        raise RuntimeError(f"scan failed: {last_line(proc)}") from None


def would_fix(code: Path, tree: Path, intent: list[str]) -> int | None:
    flags = ["--dry-run", "--isolated", "--no-cache", "--allow-dirty", "--unsafe-fixes"]
    proc = migrate(code, "apply", *flags, *intent, ".", cwd=tree)
    if proc.returncode == 2 and "--intent" in proc.stderr and "No such option" in proc.stderr:
        return None  # an old baseline without intents: no figure, not zero
    found = WOULD_FIX.search(proc.stdout)
    return int(found.group(1)) if found else 0


def python_files(tree: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in SKIP_COPY_DIRS]
        found += [Path(folder) / f for f in files if f.endswith(".py")]
    return found


def jit_lines(tree: Path) -> int:
    return sum(
        count_jit_lines(p.read_text(encoding="utf-8", errors="replace"))
        for p in python_files(tree)
        if p.is_file()
    )


def copy_tree(src: Path, dest: Path) -> Path:
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    return dest


def changed_files(tree: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-c", "core.quotepath=off", "diff", "--name-only"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in out.splitlines() if line.endswith(".py")]


def unparsable(tree: Path, files: list[str]) -> list[str]:
    bad = []
    for rel in files:
        try:
            ast.parse((tree / rel).read_text(encoding="utf-8"), rel)
        except (SyntaxError, ValueError) as exc:
            bad.append(f"{rel}: {type(exc).__name__}: {exc}")
    return bad


def importable_modules(tree: Path, files: list[str]) -> list[str]:
    names = []
    for rel in files:
        parents = Path(rel).parents
        in_package = all((tree / p / "__init__.py").is_file() for p in list(parents)[:-1])
        is_test = Path(rel).parts[0] in ("tests", "test") or Path(rel).name.startswith("test_")
        name = module_name(rel) if (in_package or is_test) else None
        if name:
            names.append(name)
    return names


IMPORT_ALL = """
import importlib, json, signal, sys, warnings
warnings.simplefilter("ignore")
def _late(*_):
    raise TimeoutError("import took over 120 s")
signal.signal(signal.SIGALRM, _late)
out = {}
for name in sys.argv[2:]:
    signal.alarm(120)
    try:
        importlib.import_module(name)
        out[name] = ""
    except BaseException as exc:
        text = str(exc).strip().splitlines()
        out[name] = f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
    finally:
        signal.alarm(0)
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""


def import_all(python: Path, tree: Path, modules: list[str], scratch: Path) -> dict[str, str]:
    """Module -> "" when it imports in that environment, else its error's first line."""
    if not modules:
        return {}
    out = scratch / f"imports-{os.getpid()}-{time.monotonic_ns()}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env |= {"PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [str(python), "-c", IMPORT_ALL, str(out), *modules],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if not out.is_file():
        return dict.fromkeys(modules, f"(the import run failed: {last_line(proc)})")
    return json.loads(out.read_text())


# ---------------------------------------------------------------- the test subset


def run_subset(subset: Subset, tree: Path, scratch: Path) -> dict[str, str]:
    """Node id -> outcome (passed, failed, skipped) of one run of the subset in `tree`."""
    from migrate.fix.test_command import parse_junit

    junit = scratch / f"junit-{os.getpid()}-{time.monotonic_ns()}.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env |= {
        "PYTHONPATH": str(tree),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_ADDOPTS": f"--junitxml={junit} -o junit_family=xunit1",
    }
    subprocess.run(subset.command, shell=True, cwd=tree, env=env, capture_output=True, timeout=3600)
    if not junit.is_file():
        return {}
    return {node: r.outcome for node, r in parse_junit(junit).items()}


def measure_tests(code: Path, subset: Subset, pristine: Path, scratch: Path) -> dict:
    before = run_subset(subset, pristine, scratch)
    gated = copy_tree(pristine, scratch / "gated")
    report = scratch / "test-report.json"
    flags = ["--isolated", "--no-cache", "--allow-dirty", "--unsafe-fixes", "--intent", "drop"]
    started = time.monotonic()
    proc = migrate(
        code,
        "apply",
        *flags,
        "--test",
        subset.command,
        "--test-report",
        str(report),
        "--test-timeout",
        "1800",
        ".",
        cwd=gated,
    )
    out: dict = {"command": subset.command, "gate_seconds": round(time.monotonic() - started)}
    passed_before = {n for n, o in before.items() if o == "passed"}
    out["passed_before"] = len(passed_before)
    out["tests"] = len(before)
    if not report.is_file():
        out["error"] = f"apply --test wrote no report: {last_line(proc)}"
        return out
    gate = json.loads(report.read_text())
    fixed = FIXED.search(proc.stdout)
    out["fixed"] = int(fixed.group(1)) if fixed else 0
    out["kept_fixes"] = sum(len(u["fixes"]) for u in gate["kept"])
    out["reverted_fixes"] = sum(len(u["fixes"]) for u in gate["reverted"])
    out["reverted"] = [
        {
            "fixes": [f"{f['path']}:{f['line']} {f['rule']}" for f in u["fixes"]],
            "broke": [f"{b['test']}: {b['failure']}" for b in u["broke"]],
        }
        for u in gate["reverted"]
    ]
    trials = [r for r in gate["runs"] if not r["phase"].startswith("baseline")]
    out["broken_by_all_fixes"] = trials[0]["broken"] if trials else []
    out["suite_runs"] = gate["suite_runs"]
    after = run_subset(subset, gated, scratch)
    out["passed_after"] = sum(1 for o in after.values() if o == "passed")
    # A test the apply marked skipped (one that only checked TorchScript) is not a failure.
    out["pass_to_skip"] = sorted(n for n in passed_before if after.get(n) == "skipped")
    out["pass_to_fail"] = sorted(
        n for n in passed_before if after.get(n, "missing") not in ("passed", "skipped")
    )
    return out


# ---------------------------------------------------------------- one repository


def measure(code: Path, name: str, tree: Path, scratch: Path, tests: bool) -> Measure:
    m = Measure()
    started = time.monotonic()
    scratch.mkdir(parents=True)
    pristine = copy_tree(tree, scratch / "tree")
    try:
        m.findings = len(scan(code, pristine))
        m.would_fix = {k: would_fix(code, pristine, flags) for k, flags in INTENTS.items()}
        m.jit_before = jit_lines(pristine)
        applied = copy_tree(pristine, scratch / "applied")
        flags = ["--isolated", "--no-cache", "--allow-dirty", "--unsafe-fixes", "--intent", "drop"]
        proc = migrate(code, "apply", *flags, ".", cwd=applied)
        found = FIXED.search(proc.stdout)
        m.fixed = int(found.group(1)) if found else 0
        left = scan(code, applied, "--intent", "drop")
        m.left = len(left)
        m.held = group_causes(left)
        m.left_findings = [{k: f[k] for k in ("path", "line", "rule", "message")} for f in left]
        m.jit_after = jit_lines(applied)
        m.changed = changed_files(applied)
        m.unparsable = unparsable(applied, m.changed)
        repo = CORPUS.get(name)
        subset = repo.subset if repo else None
        if tests and subset and subset.python.is_file():
            modules = importable_modules(applied, m.changed)
            was = import_all(subset.python, pristine, modules, scratch)
            now = import_all(subset.python, applied, modules, scratch)
            m.import_failures = {
                mod: now[mod] for mod in modules if not was.get(mod) and now.get(mod)
            }
            m.tests = measure_tests(code, subset, pristine, scratch)
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        m.error = str(exc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    m.seconds = round(time.monotonic() - started, 1)
    return m


def commit_problem(name: str, tree: Path) -> str | None:
    """Why `tree` is not the corpus commit of `name`, in one line; None when it is."""
    repo = CORPUS[name]

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    head = git("rev-parse", "HEAD")
    if not head:
        return f"{tree}: not a git work tree (lay it out with shared/tools/corpus-tree.sh)"
    laid_out = git("log", "-1", "--format=%s") == f"{repo.slug} at {repo.commit}"
    if head != repo.commit and not laid_out:
        return f"{tree}: HEAD is {head[:12]}, not {repo.slug} at {repo.commit[:12]}"
    if git("status", "--porcelain", "--untracked-files=no"):
        return f"{tree}: the work tree has changes; lay it out again"
    return None


# ---------------------------------------------------------------- report


def report(results: dict[str, dict[str, Measure]], sides: list[str]) -> str:
    base = "baseline" in sides

    def cell(name: str, get) -> str:
        now = get(results[name]["this"])
        return pair(get(results[name]["baseline"]), now) if base else pair(_ABSENT, now)

    header = [
        "repository", "findings", "none", "drop", "share (drop)", "keep",
        "fixed (real drop)", "left", "jit lines", "jit lines left",
    ]  # fmt: skip
    rows = []
    for name in results:
        rows.append(
            [
                name,
                cell(name, lambda m: m.findings),
                cell(name, lambda m: m.would_fix.get("none")),
                cell(name, lambda m: m.would_fix.get("drop")),
                cell(name, lambda m: share(m.would_fix.get("drop"), m.findings)),
                cell(name, lambda m: m.would_fix.get("keep")),
                cell(name, lambda m: m.fixed),
                cell(name, lambda m: m.left),
                str(results[name]["this"].jit_before),
                cell(name, lambda m: m.jit_after),
            ]
        )
    total = {side: _total(results, side) for side in sides}
    rows.append(
        ["all"]
        + [
            pair(total["baseline"][k], total["this"][k])
            if base
            else pair(_ABSENT, total["this"][k])
            for k in ("findings", "none", "drop", "share", "keep", "fixed", "left")
        ]
        + [str(total["this"]["jit_before"])]
        + [
            pair(total["baseline"]["jit_after"], total["this"]["jit_after"])
            if base
            else pair(_ABSENT, total["this"]["jit_after"])
        ]
    )
    out = [table(header, rows), ""]
    for name, per_side in results.items():
        m = per_side["this"]
        if m.error:
            out.append(f"{name}: error: {m.error}")
        if m.unparsable:
            out.append(
                f"{name}: files the apply left as invalid Python: " + "; ".join(m.unparsable)
            )
    out += ["", "What still holds under drop (after the real apply), by cause:", ""]
    for name, per_side in results.items():
        m = per_side["this"]
        out.append(f"{name}: {m.left} left")
        for n, rules, reason in m.held[:8]:
            out.append(f"  {n:>4}  {rules:<14} {reason[:220]}")
        if len(m.held) > 8:
            rest = sum(n for n, _, _ in m.held[8:])
            out.append(f"  {rest:>4}  ({len(m.held) - 8} other causes)")
    tested = {n: s["this"] for n, s in results.items() if s["this"].tests is not None}
    if tested:
        out += ["", _tests_table(tested, results, base)]
    return "\n".join(out)


def _tests_table(tested: dict[str, Measure], results, base: bool) -> str:
    header = [
        "repository", "tests", "passing before", "after (gated drop)", "pass -> fail", "pass -> skip",
        "gate kept", "gate reverted", "broken before the gate", "imports lost",
    ]  # fmt: skip
    rows = []
    lines = []
    for name, m in tested.items():
        t = m.tests or {}
        if "error" in t:
            rows.append([name, t.get("tests", "-"), t.get("passed_before", "-")] + ["-"] * 7)
            lines.append(f"{name}: {t['error']}")
            continue
        rows.append(
            [
                name,
                t["tests"],
                t["passed_before"],
                t["passed_after"],
                len(t["pass_to_fail"]),
                len(t.get("pass_to_skip", [])),
                t["kept_fixes"],
                t["reverted_fixes"],
                len(t["broken_by_all_fixes"]),
                len(m.import_failures),
            ]
        )
        for node in t["pass_to_fail"]:
            lines.append(f"{name}: pass -> fail: {node}")
        for node in t.get("pass_to_skip", []):
            lines.append(f"{name}: pass -> skipped by the apply: {node}")
        for unit in t["reverted"]:
            lines.append(f"{name}: reverted {' + '.join(unit['fixes'])}")
            lines += [f"    broke {b[:200]}" for b in unit["broke"][:3]]
        for module, error in m.import_failures.items():
            lines.append(f"{name}: no longer imports: {module}: {error}")
    commands = [f"{n}: (cwd: the copy) {m.tests['command']}" for n, m in tested.items()]
    note = "" if not base else "(test columns: this checkout only)\n"
    return "\n".join(
        [note + "The repositories' own test subsets (this checkout):", "", table(header, rows)]
        + [""]
        + lines
        + ["", "Commands:"]
        + commands
    )


def _total(results, side: str) -> dict:
    ms = [s[side] for s in results.values()]

    def add(get):
        values = [get(m) for m in ms]
        return None if any(v is None for v in values) else sum(values)

    t = {
        "findings": add(lambda m: m.findings),
        "none": add(lambda m: m.would_fix.get("none")),
        "drop": add(lambda m: m.would_fix.get("drop")),
        "keep": add(lambda m: m.would_fix.get("keep")),
        "fixed": add(lambda m: m.fixed),
        "left": add(lambda m: m.left),
    }
    t["share"] = share(t["drop"], t["findings"])
    t["jit_before"] = add(lambda m: m.jit_before)
    t["jit_after"] = add(lambda m: m.jit_after)
    return t


def load_rows(path: Path) -> dict[str, dict[str, Measure]]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: {side: Measure(**m) for side, m in per_side.items() if side != "commit"}
        for name, per_side in rows.items()
    }


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path, help="corpus trees (default: CORPUS)")
    parser.add_argument("--baseline", type=Path, help="another checkout of the tool")
    parser.add_argument("--tests", action="store_true", help="also run each test subset")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="JSON",
        help="print the tables of rows --json wrote; run nothing",
    )
    args = parser.parse_args()
    if args.report:
        results = load_rows(args.report)
        print(report(results, list(next(iter(results.values())))))
        return 0
    trees = args.trees or [CORPUS_DIR / name for name in CORPUS]
    for tree in trees:
        if not tree.is_dir():
            print(f"{tree}: no such folder (see shared/DEV_CORPUS.md)", file=sys.stderr)
            return 2
        if tree.name in CORPUS and (problem := commit_problem(tree.name, tree)):
            print(problem, file=sys.stderr)
            return 2
    if args.baseline and not (args.baseline / "migrate" / "__main__.py").is_file():
        print(
            f"{args.baseline}: not a checkout of the tool (no migrate/__main__.py)", file=sys.stderr
        )
        return 2
    os.nice(10)
    sides = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    results: dict[str, dict[str, Measure]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="migrate-dev-corpus-"))
    try:
        for tree in trees:
            results[tree.name] = {}
            for side, code in sides.items():
                # The test subsets are slow: they run for this checkout only.
                tests = args.tests and side == "this"
                m = measure(code, tree.name, tree.resolve(), scratch / side / tree.name, tests)
                results[tree.name][side] = m
                print(
                    f"{tree.name} ({side}): {m.findings} findings, drop would fix "
                    f"{m.would_fix.get('drop')}, fixed {m.fixed}, {m.seconds:.0f} s"
                    + (f"; error: {m.error}" if m.error else ""),
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(report(results, list(sides)))
    if args.json:
        rows = {
            name: {side: asdict(m) for side, m in per_side.items()}
            | {"commit": CORPUS[name].commit if name in CORPUS else None}
            for name, per_side in results.items()
        }
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
