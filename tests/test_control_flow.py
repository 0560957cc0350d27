"""Issue 7: data-dependent branches (MIG131) rewritten to torch.cond, proven on both sides.

The rewritten fixtures (fixtures/rules/MIG131/*.after.py) are exported with torch.export and
lowered to ExecuTorch; outputs are compared with the original eager module on samples that
`migrate.verify.branches` found for each side of each condition.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from tests.fixture_cases import RULE_FIXTURES, read

FIXTURES = RULE_FIXTURES / "MIG131"

# case -> (class, example input shapes)
REWRITTEN = {
    "return_form": ("Gate", [(2, 4)]),
    "assign_form": ("Mixer", [(2, 4)]),
    "if_without_else": ("Clip", [(3,), (3,)]),
    "ternary": ("Pick", [(3,), (3,)]),
    "tuple_outputs": ("Split", [(5,)]),
    "elif_chain": ("Bucket", [(4,)]),
    "helpers_and_submodules": ("Net", [(2, 4)]),
}


def _load(source: str, filename: str) -> dict:
    """Imports, classes and functions of a fixture (module-level capture calls are skipped),
    as a registered module: torch.export (dynamo) looks functions' modules up by name."""
    tree = ast.parse(source)
    keep = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef)
    tree.body = [n for n in tree.body if isinstance(n, keep)]
    name = f"_mig131_fixture_{Path(filename).name.replace('.', '_')}"
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    exec(compile(tree, filename, "exec"), module.__dict__)
    return module.__dict__


def _pair(case: str):
    import torch

    cls, shapes = REWRITTEN[case]
    before_src = read(FIXTURES / f"{case}.before.py")
    after_src = read(FIXTURES / f"{case}.after.py")
    torch.manual_seed(0)
    before = _load(before_src, f"{case}.before.py")[cls]().eval()
    after = _load(after_src, f"{case}.after.py")[cls]().eval()
    after.load_state_dict(before.state_dict())
    example = tuple(torch.randn(s) for s in shapes)
    return before, after, before_src, example


def _side_samples(before, example, source):
    """Samples taking each side of each condition (the verifier must find both)."""
    from migrate.verify.branches import branch_samples, search_branches

    report = search_branches(before, example, source=source, keep=1)
    assert report.error is None
    assert report.conditions, "the fixture has data-dependent conditions"
    missing = [c.message() for c in report.conditions if not c.covered]
    assert not missing, missing
    wanted = {n for c in report.conditions for n in (*c.true_samples, *c.false_samples)}
    return {s.name: s.args for s in branch_samples(example) if s.name in wanted}


# Exported, lowered and run on both sides: 4-20 s of CPU each (the first one in a worker
# pays executorch's import too), so all run with the slow tests (CI's full suite). The
# default suite keeps the analysis of the same pairs (test_trace_that_froze_a_branch_is_caught
# and the tests below).
@pytest.mark.verify
@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(REWRITTEN))
def test_rewritten_module_exports_and_matches_eager_on_both_sides(case):
    import torch

    before, after, source, example = _pair(case)
    samples = _side_samples(before, example, source)
    ep = torch.export.export(after, example)
    assert "cond" in str(ep.graph), "the rewrite is captured as torch.cond"
    exported = ep.module()
    with torch.no_grad():
        for name, args in samples.items():
            torch.testing.assert_close(
                exported(*args), before(*args), msg=lambda m, n=name: f"{n}: {m}"
            )
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime

    program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    with torch.no_grad():
        for name, args in samples.items():
            want = before(*args)
            got = method.execute(list(args))
            got = tuple(got) if isinstance(want, tuple) else got[0]
            torch.testing.assert_close(got, want, msg=lambda m, n=name: f"{n} (.pte): {m}")


@pytest.mark.verify
def test_trace_that_froze_a_branch_is_caught():
    import torch

    from migrate.verify.branches import check_trace

    before, _, source, example = _pair("return_form")
    report = check_trace(before, example, source=source)
    assert report.error is None
    assert report.frozen
    mismatch = report.mismatches[0]
    cond, traced_side, sample_side = mismatch.flipped[0]
    assert (cond.function, cond.condition) == ("Gate.forward", "y.sum() > 0")
    assert traced_side != sample_side
    assert "froze the" in mismatch.message()
    # A module without data-dependent branches traces faithfully.
    plain = _load(read(FIXTURES / "negatives.before.py"), "negatives.py")["Plain"]().eval()
    clean = check_trace(plain, (torch.randn(3, 4),), n=4)
    assert clean.samples_checked > 0
    assert not clean.frozen, [m.message() for m in clean.mismatches]


@pytest.mark.verify
def test_search_says_when_a_side_is_never_taken():
    import torch

    from migrate.verify.branches import find_conditions, search_branches

    source = textwrap.dedent(
        """
        import torch


        def norm(t):
            if t.abs().sum() < 0:
                return t * 0
            else:
                return t / (t.abs().sum() + 1)


        class Never(torch.nn.Module):
            def forward(self, x, flag: bool = False):
                if flag:
                    x = x + 1
                return norm(x)
        """
    )
    model = _load(source, "never.py")["Never"]()
    conditions = find_conditions(model, source)
    assert [(c.function, c.condition, c.fix) for c in conditions] == [
        ("norm", "t.abs().sum() < 0", "auto")
    ]
    report = search_branches(model, (torch.randn(3),), source=source, n=4)
    (coverage,) = report.conditions
    assert coverage.missing == [True]
    assert coverage.false_samples
    assert not report.complete
    assert "no sample found for the true side" in coverage.message()


# --------------------------------------------------------------------------- the CLI


MODEL = """\
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, scale: float = 1.0):
        h = self.lin(x)
        if h.shape[0] > 1 and scale > 0:
            h = h * scale
        if h.sum() > 0:
            return h * 2
        else:
            return h - 1


class Unused(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""

EXPORT = """\
import torch

from model import Net


def main():
    m = Net()
    return torch.jit.trace(m.eval(), torch.randn(2, 4))
"""


def _migrate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args, "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("filler", [0, 60], ids=["serial", "process-pool"])
def test_class_captured_in_another_file_is_analysed(tmp_path, filler):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "model.py").write_text(MODEL)  # no `jit` here: phase 1 does not parse it
    (repo / "export.py").write_text(EXPORT)
    for i in range(filler):  # enough parsed files for the process pool
        (repo / f"m{i}.py").write_text(f"import torch\nf{i} = torch.jit.script\n")
    proc = _migrate("scan", "-f", "json", "--select", "MIG131", "-j", "2", ".", cwd=repo)
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert [(f["path"], f["line"], f["fix"]) for f in findings] == [("model.py", 13, "auto")]
    assert "`Net.forward`" in findings[0]["message"]

    proc = _migrate("apply", "--unsafe-fixes", "--select", "MIG131", "--allow-dirty", ".", cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr
    fixed = (repo / "model.py").read_text()
    assert "torch.cond(h.sum() > 0, _true_branch_1, _false_branch_1, (h,))" in fixed
    assert "import torch\n" in fixed
    assert "if x.sum() > 0:" in fixed  # Unused is never captured
    proc = _migrate("scan", "-f", "json", "--select", "MIG131", ".", cwd=repo)
    assert json.loads(proc.stdout)["findings"] == []


def test_uncaptured_repo_reports_nothing(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "run.py").write_text("import torch.jit\n\nfrom model import Net\n\nnet = Net()\n")
    proc = _migrate("scan", "-f", "json", "--select", "MIG131", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["findings"] == []
