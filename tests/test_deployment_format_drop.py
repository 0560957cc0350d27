"""Under `--intent drop`, a repository's own deployment format (a save/load pair of wrappers
around a TorchScript archive with metadata in `_extra_files`, as an interatomic-potential
library ships its compiled models) moves to torch.export: the saver exports with example
inputs it now takes, the loader loads the program, drops the freeze pass and gives the
metadata back as the bytes its code decodes. Run before and after, with torch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.scan_support import run_cli, write_tree

DEPLOY = """\
from typing import Union

import torch
from e3nn.util.jit import script


def prepare(model, device):
    return model.to(device).eval()


def save_deployed(
    model: torch.nn.Module,
    metadata: dict,
    output_path: str,
    device: Union[str, torch.device],
) -> None:
    encoded = {k: str(v).encode("ascii") for k, v in metadata.items()}
    model = prepare(model, device)
    scripted = script(model)
    torch.jit.save(scripted, output_path, _extra_files=encoded)


def load_deployed(path, device="cpu"):
    metadata = {"r_max": None, "names": None}
    model = torch.jit.load(path, _extra_files=metadata, map_location=device)
    model = torch.jit.freeze(model)
    metadata["r_max"] = float(metadata["r_max"])
    metadata["names"] = metadata["names"].decode("utf-8").split(" ")
    return model, metadata
"""

CLI = """\
import torch

from pkg.deploy import save_deployed


def main(out):
    save_deployed(torch.nn.Linear(4, 2), {"r_max": 5.0, "names": "H C"}, out, "cpu")
"""

# Another library's scripting function (e3nn.util.jit.script), outside the scanned tree.
E3NN_JIT = "import torch\n\n\ndef script(mod):\n    return torch.jit.script(mod)\n"

RUN = """\
import sys

import torch

from pkg.deploy import load_deployed, save_deployed

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
x = torch.randn(3, 4)
meta = {{"r_max": 5.0, "names": "H C O"}}
save_deployed(net, meta, sys.argv[1], "cpu"{example})
model, metadata = load_deployed(sys.argv[1])
torch.testing.assert_close(model(x), net(x))
print(metadata)
"""


def _run(root: Path, stub: Path, script: str, *args: str) -> str:
    (root / "run_it.py").write_text(script, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "run_it.py", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{stub}"},
        timeout=300,
    )
    (root / "run_it.py").unlink()
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_the_deployment_pair_moves_and_keeps_outputs_and_metadata(tmp_path):
    root = write_tree(
        tmp_path / "repo", {"pkg/__init__.py": "", "pkg/deploy.py": DEPLOY, "pkg/cli.py": CLI}
    )
    stub = write_tree(
        tmp_path / "stub",
        {"e3nn/__init__.py": "", "e3nn/util/__init__.py": "", "e3nn/util/jit.py": E3NN_JIT},
    )
    before = _run(root, stub, RUN.format(example=""), str(tmp_path / "model.pth"))

    run = run_cli(
        ["apply", ".", "--intent", "drop", "--unsafe-fixes", "--allow-dirty", "--no-cache"],
        cwd=root,
    )
    assert run.code in (0, 1), run.stderr
    deploy = (root / "pkg/deploy.py").read_text(encoding="utf-8")
    assert "torch.jit" not in deploy and "script(model)" not in deploy
    assert "    device: Union[str, torch.device],\n    example_inputs=None,\n) -> None:" in deploy
    # The call that passes no example is left to a person, named, and raises until then.
    assert (root / "pkg/cli.py").read_text(encoding="utf-8") == CLI
    assert "pkg/cli.py:7" in run.stdout and "pass `example_inputs=[...]` here" in run.stdout

    after = _run(root, stub, RUN.format(example=", example_inputs=[x]"), str(tmp_path / "m.pt2"))
    assert after == before  # the same metadata, decoded from bytes by the same code
    raised = textwrap.dedent(
        """\
        import torch
        from pkg.cli import main
        try:
            main("x.pt2")
        except ValueError as exc:
            print("ValueError", exc)
        """
    )
    assert "example_inputs" in _run(root, stub, raised)
