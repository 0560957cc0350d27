"""Behaviour, not only text: run the sample before and after `migrate apply` and compare.

The original (TorchScript) sample and the migrated one (torch.export + ExecuTorch) each run
in their own Python process: export, serve, load the mobile artifact. On the CPU build of
torch used here `optimize_for_mobile` fails (its passes need XNNPACK), so the original
mobile path saves the traced module with `_save_for_lite_interpreter` directly; the
migrated ExecuTorch program is compared with that and with eager.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_apply_repo import SAMPLE, migrate

DRIVER = textwrap.dedent(
    """
    import os, sys
    import torch

    root, out, flavour = sys.argv[1:4]
    sys.path.insert(0, root)
    if flavour == "original":
        import torch.utils.mobile_optimizer as mobile_optimizer

        # CPU torch has no XNNPACK mobile passes: keep the traced module as it is.
        mobile_optimizer.optimize_for_mobile = lambda module, *args, **kwargs: module
    from sample.export_model import EXAMPLE_SHAPE, export
    from sample.model import build_model
    from sample.serve import Predictor

    export(out)
    torch.manual_seed(123)
    x = torch.randn(*EXAMPLE_SHAPE)
    with torch.no_grad():
        results = {"eager": build_model()(x), "serve": Predictor(out)(x)}
    if flavour == "original":
        from torch.jit.mobile import _load_for_lite_interpreter

        results["mobile"] = _load_for_lite_interpreter(os.path.join(out, "model.ptl"))(x)
    else:
        from executorch.runtime import Runtime

        program = Runtime.get().load_program(os.path.join(out, "model.pte"))
        results["mobile"] = program.load_method("forward").execute((x,))[0]
    results["files"] = sorted(os.listdir(out))
    torch.save(results, os.path.join(out, "results.pt"))
    """
)


def start(root: Path, out: Path, flavour: str) -> subprocess.Popen:
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(root), str(out), flavour],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


@pytest.mark.verify
@pytest.mark.slow  # two processes that import torch and executorch, export and lower: ~35 s CPU
def test_migrated_sample_computes_what_the_original_did(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("executorch.runtime")
    original = tmp_path / "original"
    migrated = tmp_path / "migrated"
    shutil.copytree(SAMPLE / "before", original)
    shutil.copytree(SAMPLE / "before", migrated)
    applied = migrate("apply", "--unsafe-fixes", str(migrated))
    assert applied.returncode == 0, applied.stdout + applied.stderr

    runs = {
        "original": start(original, tmp_path / "out_original", "original"),
        "migrated": start(migrated, tmp_path / "out_migrated", "migrated"),
    }
    results = {}
    for flavour, proc in runs.items():
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{flavour} run failed:\n{output[-4000:]}"
        results[flavour] = torch.load(tmp_path / f"out_{flavour}" / "results.pt")
    before, after = results["original"], results["migrated"]

    assert before["files"] == ["model.pt", "model.ptl"]
    assert after["files"] == ["model.pt2", "model.pte"]
    # The model file's eager behaviour is unchanged by the rewrite.
    torch.testing.assert_close(after["eager"], before["eager"], rtol=0, atol=0)
    # Serving: torch.jit.load of the traced archive vs torch.export.load of the .pt2.
    torch.testing.assert_close(before["serve"], before["eager"])
    torch.testing.assert_close(after["serve"], before["serve"])
    torch.testing.assert_close(after["serve"], after["eager"])
    # Mobile: the lite interpreter vs the XNNPACK-lowered ExecuTorch program.
    torch.testing.assert_close(before["mobile"], before["eager"])
    torch.testing.assert_close(after["mobile"], before["mobile"], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(after["mobile"], after["eager"], rtol=1e-4, atol=1e-5)
