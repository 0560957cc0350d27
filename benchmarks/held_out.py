"""Commits in which maintainers removed TorchScript by hand, against the tool on their parent.

    python benchmarks/held_out.py [--mirrors DIR] [--keep DIR] [--baseline CHECKOUT]

For each commit below (a public repository fetched into DIR, default the `.mirror` folder
beside the checkout, as ../shared/DEV_CORPUS.md says), the parent commit is laid out as a
work tree (../shared/tools/corpus-tree.sh), `migrate apply --intent I --unsafe-fixes` runs
on it with the maintainers' intent, and the TorchScript lines the maintainers removed (a
removed line of a `.py` file that says jit, script, trace, is_scripting or is_tracing) are
counted with how many of them the tool removed too (same file, same stripped text). With
`--baseline` another checkout of the tool runs on the same trees, side by side.
A row prints what the tool missed (first few) so the gap can be read, not only counted.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE_TOOL = ROOT.parent / "shared" / "tools" / "corpus-tree.sh"
WORDS = re.compile(r"jit|script|trace|is_scripting|is_tracing")

# (repository, commit the maintainers made, their intent, what they did)
COMMITS = [
    ("mlfoundations/open_clip", "4dcf40c", "drop", "removed torch.jit references"),
    ("huggingface/pytorch-image-models", "bdab30b0", "drop",
     "dropped scripting of four model families (their overload stubs) for the 2.11 warnings"),
    ("huggingface/pytorch-image-models", "2bfa5e5d", "keep-scriptable",
     "removed JIT activations and other torch.jit.script"),
    ("mir-group/nequip", "2853c7d6", "keep-scriptable", "removed unnecessary @torch.jit.script"),
    ("e3nn/e3nn", "163ce4f9", "drop", "removed the test that saved a jit model"),
]  # fmt: skip


def removed_lines(diff: str) -> Counter:
    out: Counter = Counter()
    path = None
    for line in diff.splitlines():
        if line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") else None
        elif line.startswith("-") and not line.startswith("---") and path and WORDS.search(line):
            out[(path, line[1:].strip())] += 1
    return out


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True).stdout


def tool_removed(code: Path, tree: Path, intent: str) -> Counter:
    env = {**os.environ, "PYTHONPATH": str(code), "MIGRATE_CACHE_DIR": str(tree) + ".cache"}
    subprocess.run(["git", "checkout", "-q", "."], cwd=tree)
    subprocess.run(
        [sys.executable, "-m", "migrate", "apply", ".", "--intent", intent, "--unsafe-fixes",
         "--no-cache", "--allow-dirty"],
        cwd=tree, env=env, capture_output=True, text=True,
    )  # fmt: skip
    found = removed_lines(git("diff", "--", "*.py", cwd=tree))
    subprocess.run(["git", "checkout", "-q", "."], cwd=tree)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mirrors", type=Path, default=ROOT.parent / ".mirror")
    parser.add_argument("--keep", type=Path, help="lay the parent trees out here (kept)")
    parser.add_argument("--baseline", type=Path, help="another checkout of the tool")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="held-out-"))
    codes = {"this": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
    totals = {label: 0 for label in codes}
    human_total = 0
    print(
        f"{'repository':34} {'commit':9} {'intent':16} {'removed':>7} "
        + " ".join(f"{label:>9}" for label in codes)
    )
    for repo, commit, intent, what in COMMITS:
        mirror = args.mirrors / repo.replace("/", "+") / "repo"
        if not mirror.is_dir():
            print(f"{repo:34} {commit:9} not fetched ({mirror}): fetch github:{repo} first")
            continue
        parent = git(f"--git-dir={mirror}", "rev-parse", f"{commit}^").strip()
        tree = work / f"{repo.split('/')[1]}-{commit}"
        if not tree.is_dir():
            subprocess.run([str(TREE_TOOL), repo, parent, str(tree)], capture_output=True,
                           env={**os.environ, "MIRRORS": str(args.mirrors)})  # fmt: skip
        human = removed_lines(
            git(f"--git-dir={mirror}", "diff", f"{commit}^", commit, "--", "*.py")
        )
        row, missed = [], []
        for label, code in codes.items():
            tool = tool_removed(code, tree, intent)
            both = sum(min(n, tool[k]) for k, n in human.items())
            totals[label] += both
            row.append(f"{both:>9}")
            if label == "this":
                missed = [k for k in human if not tool[k]]
        human_total += sum(human.values())
        print(f"{repo:34} {commit:9} {intent:16} {sum(human.values()):>7} " + " ".join(row))
        print(f"    ({what}); missed, first of {len(missed)}:")
        for path, text in missed[:4]:
            print(f"      {path}: {text[:90]}")
    print(
        f"{'all':34} {'':9} {'':16} {human_total:>7} "
        + " ".join(f"{totals[label]:>9}" for label in codes)
    )
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
