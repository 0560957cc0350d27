"""What `migrate apply --test` costs: suite runs and wall time against one suite run.

    python benchmarks/apply_test_bench.py [--modules 24] [--real-torch]

Builds a library-shaped sample (MODULES modules, each with its own test file and five fix
units: a scripted function, `torch.jit.annotate`, `@torch.jit.unused`, `is_scripting`, and a
trace + save group), of which exactly two units break a test: one module's `is_scripting`
branch and another's saved artifact are checked by its tests. It then runs
`migrate apply lib --unsafe-fixes --test "python -m pytest -q"` on fresh copies, with every test
file per trial and with `--test-select imports`, and prints the runs made, the estimate for
one culprit, the wall time, and that time over one plain suite run.

Only `lib` is migrated: its tests keep their TorchScript calls, as a project's tests of the
old behaviour would. By default the sample brings its own minimal `torch` package (as
tests/test_apply_test.py does): a run of its suite costs pytest's start-up, not torch's
import. With --real-torch it uses torch itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_apply_test import FAKE_TORCH, write_tree  # noqa: E402

PYTEST = "python -m pytest -q -p no:cacheprovider"

MODULE = """
import os

import torch


@torch.jit.script
def scale_{i}(x: int) -> int:
    return x * {i}


def collect_{i}(n: int):
    out = torch.jit.annotate(list, [])
    for k in range(n):
        out.append(k + {i})
    return out


class Helper{i}:
    @torch.jit.unused
    def name(self) -> str:
        return "helper{i}"


def mode_{i}() -> str:
    if torch.jit.is_scripting():
        return "scripted"
    return "eager"


def export_{i}(model, example, out_dir: str) -> str:
    traced = torch.jit.trace(model, example)
    path = os.path.join(out_dir, "model{i}.pt")
    torch.jit.save(traced, path)
    return path
"""

TEST = """
import torch

from lib.m{i:02d} import Helper{i}, collect_{i}, export_{i}, mode_{i}, scale_{i}


def test_scale():
    assert scale_{i}(2) == {i} * 2


def test_collect():
    assert collect_{i}(2) == [{i}, {i} + 1]


def test_helper():
    assert Helper{i}().name() == "helper{i}"
{extra}
"""

MODE_TEST = """

def test_mode():
    assert torch.jit.script(mode_{i})() == "scripted"
"""

SAVE_TEST = """

def test_export(tmp_path):
    with open(export_{i}(object(), None, str(tmp_path))) as f:
        assert f.read() == "torchscript"
"""


# --real-torch: the same library against torch itself. The two fixes that break a test do
# so for the reasons their rules' fix safety gives: a scripted function's `is_scripting()`
# branch is no longer taken, and `torch.jit.load` cannot read what `torch.export.save` wrote.
REAL_MODULE = """
import os
from typing import List

import torch


class Net{i}(torch.nn.Module):
    @torch.jit.unused
    def describe(self) -> str:
        return "net{i}"

    def forward(self, x):
        return x * {i} + 1


def mode_{i}() -> str:
    if torch.jit.is_scripting():
        return "scripted"
    return "eager"


def collect_{i}(n: int) -> List[int]:
    out = torch.jit.annotate(List[int], [])
    for k in range(n):
        out.append(k + {i})
    return out


def export_{i}(out_dir: str) -> str:
    traced = torch.jit.trace(Net{i}(), torch.ones(2))
    path = os.path.join(out_dir, "model{i}.pt")
    torch.jit.save(traced, path)
    return path
"""

REAL_TEST = """
import torch

from lib.m{i:02d} import Net{i}, collect_{i}, export_{i}, mode_{i}


def test_collect():
    assert collect_{i}(2) == [{i}, {i} + 1]


def test_eager():
    assert mode_{i}() == "eager"
    assert Net{i}().describe() == "net{i}"
{extra}
"""

REAL_MODE_TEST = """

def test_scripted_mode():
    assert torch.jit.script(mode_{i})() == "scripted"
"""

REAL_SAVE_TEST = """

def test_export(tmp_path):
    loaded = torch.jit.load(export_{i}(str(tmp_path)))
    assert loaded(torch.ones(2)).tolist() == [{i} + 1.0, {i} + 1.0]
"""


def build(root: Path, modules: int, real_torch: bool = False) -> None:
    files = {} if real_torch else dict(FAKE_TORCH)
    module, test = (REAL_MODULE, REAL_TEST) if real_torch else (MODULE, TEST)
    mode_test, save_test = (
        (REAL_MODE_TEST, REAL_SAVE_TEST) if real_torch else (MODE_TEST, SAVE_TEST)
    )
    files["lib/__init__.py"] = ""
    for i in range(modules):
        files[f"lib/m{i:02d}.py"] = module.format(i=i)
        extra = mode_test if i == modules // 3 else save_test if i == 2 * modules // 3 else ""
        files[f"tests/test_m{i:02d}.py"] = test.format(i=i, extra=extra.format(i=i))
    write_tree(root, files)


def environment(scratch: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "MIGRATE_CACHE_DIR": str(scratch / "cache"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=24)
    parser.add_argument(
        "--real-torch", action="store_true", help="The sample uses torch itself (slower runs)."
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="apply-test-bench-"))
    try:
        sample = scratch / "sample"
        build(sample, args.modules, args.real_torch)
        env = environment(scratch)
        for _ in range(2):  # the second run is timed: file caches warm, as in the gate's runs
            start = time.perf_counter()
            subprocess.run(PYTEST, shell=True, cwd=sample, env=env, capture_output=True)
            one_run = time.perf_counter() - start
        kind = "torch" if args.real_torch else "a stand-in torch"
        print(f"sample: {args.modules} modules, {kind}; one plain suite run: {one_run:.2f} s")
        # "x one run" divides by the plain run above; "x baseline" by the gate's own first
        # run, timed under the same load (the machine is shared).
        print(
            f"{'mode':<10} {'units':>5} {'reverted':>8} {'runs':>4} {'est.':>4} "
            f"{'wall s':>7} {'x one run':>9} {'baseline s':>10} {'x baseline':>10}"
        )
        reverted: set[str] = set()
        for select in ("all", "imports"):
            repo = scratch / f"repo-{select}"
            shutil.copytree(sample, repo)
            report = scratch / f"{select}.json"
            command = [sys.executable, "-m", "migrate", "apply", "lib", "--unsafe-fixes"]
            command += ["--test", PYTEST, "--test-select", select, "--test-report", str(report)]
            start = time.perf_counter()
            subprocess.run(command, cwd=repo, env=env, capture_output=True)
            wall = time.perf_counter() - start
            data = json.loads(report.read_text())
            units = len(data["kept"]) + len(data["reverted"])
            print(
                f"{select:<10} {units:>5} {len(data['reverted']):>8} {data['suite_runs']:>4} "
                f"{data['estimated_runs']:>4} {wall:>7.1f} {wall / one_run:>9.1f} "
                f"{data['one_suite_seconds']:>10.2f} {wall / data['one_suite_seconds']:>10.1f}"
            )
            reverted.update(
                "+".join(f"{f['path']}:{f['line']} {f['rule']}" for f in r["fixes"])
                + " broke "
                + ", ".join(b["test"] for b in r["broke"])
                for r in data["reverted"]
            )
        print("reverted:", *sorted(reverted), sep="\n  ")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
