"""MIG110 across files: is_scripting()/is_tracing() stay while another file scripts or
exports to ONNX with the TorchScript-based exporter."""

from __future__ import annotations

from tests.scan_support import run_cli

LAYER = """\
import torch


def layer(x):
    if not torch.jit.is_scripting():
        x = x + 1
    if torch.jit.is_tracing():
        return x
    return x * 2
"""


def _fixes(tmp_path) -> list[tuple[int, str]]:
    run = run_cli(["scan", "-f", "json", "--select", "MIG110", "."], cwd=tmp_path)
    assert run.code == 1, run.stderr
    return [(f["line"], f["fix"]) for f in run.json()["findings"] if f["path"] == "layer.py"]


def test_scripting_elsewhere_keeps_is_scripting(tmp_path):
    (tmp_path / "layer.py").write_text(LAYER)
    (tmp_path / "build.py").write_text(
        "import torch\n\nfrom layer import layer\n\nf = torch.jit.script(layer)\n"
    )
    assert _fixes(tmp_path) == [(5, "assisted"), (7, "auto")]


def test_legacy_onnx_export_elsewhere_keeps_is_tracing(tmp_path):
    (tmp_path / "layer.py").write_text(LAYER)
    (tmp_path / "onnx_out.py").write_text(
        "import torch\n\n\ndef save(m, x):\n    torch.onnx.export(m, (x,), 'm.onnx')\n"
    )
    assert _fixes(tmp_path) == [(5, "auto"), (7, "assisted")]
    (tmp_path / "onnx_out.py").write_text(
        "import torch\n\n\ndef save(m, x):\n    torch.onnx.export(m, (x,), 'm.onnx', dynamo=True)\n"
    )
    assert _fixes(tmp_path) == [(5, "auto"), (7, "auto")]

    run = run_cli(
        ["apply", "--unsafe-fixes", "--select", "MIG110", "--allow-dirty", "."], cwd=tmp_path
    )
    assert run.code in (0, 1), run.stderr
    # torch's only uses were the guards: the import they left unused goes too.
    assert (tmp_path / "layer.py").read_text() == (
        "def layer(x):\n    x = x + 1\n    return x * 2\n"
    )
