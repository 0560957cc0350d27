"""Cost of the repository facts (migrate.facts.build_facts) next to parsing the same files.

    python benchmarks/analysis_bench.py [FOLDER] [--repeat 3]

FOLDER defaults to the installed torch package (found without importing torch): thousands
of files, hundreds of them full of torch.jit, a worst case. Prints, best of --repeat runs:
  - ast.parse of every file   (the baseline: apply has these trees already)
  - build_facts on the files, and on two copies of them under different module names
    (the ratio shows the cost is linear: about 2)
Times are CPU seconds of this process (time.process_time), steadier than wall time on a
shared machine, with the garbage collector off while timing (as timeit does): with 46 MB of
trees alive its full passes otherwise land at random in one run or another.
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib.util
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migrate.facts import SourceFile, build_facts  # noqa: E402
from migrate.scan.discover import module_name  # noqa: E402


def _best(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.folder:
        root = Path(args.folder)
    else:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            sys.exit("analysis_bench: torch is not installed; name a folder")
        root = Path(list(spec.submodule_search_locations)[0])
    texts = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = Path(folder, name)
                texts.append((path, path.read_text(encoding="utf-8", errors="replace")))
    sys.setrecursionlimit(10_000)
    files = []
    for path, text in texts:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        files.append(
            SourceFile(path.relative_to(root).as_posix(), module_name(path, root), text, tree)
        )

    parse = _best(args.repeat, lambda: [ast.parse(f.text) for f in files])
    copies = files + [
        SourceFile(f"copy/{f.display}", f"copy.{f.module}", f.text, f.tree) for f in files
    ]
    whole = _best(args.repeat, lambda: build_facts(files))
    double = _best(args.repeat, lambda: build_facts(copies))
    facts = build_facts(files)
    print(f"{root}: {len(files)} files, {sum(len(f.text) for f in files) / 1e6:.1f} MB")
    print(f"  ast.parse, every file       {parse:7.2f} s")
    print(f"  build_facts, every file     {whole:7.2f} s   ({whole / parse:.2f}x parse)")
    print(f"  build_facts, two copies     {double:7.2f} s   ({double / whole:.2f}x one copy)")
    print(
        f"  facts: {len(facts.sites)} artifact sites, {len(facts.captures)} captures, "
        f"{sum(len(c.uses) for c in facts.captures)} outside uses"
    )


if __name__ == "__main__":
    main()
