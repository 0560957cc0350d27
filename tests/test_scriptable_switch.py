"""MIG144, issue 27 item 5: a `scriptable=True` switch goes only where it does nothing but
turn on `torch.jit`. timm's also picks other layer implementations, so a test comparing the
two (timm's own `with set_layer_config(scriptable=True):`) must not become a comparison of one
implementation with itself; a repository function whose flag only guards `torch.jit.script`
loses it under `--intent drop`. Real CLI runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.scan_support import run_cli, write_tree

TIMM_TEST = """\
import torch
from timm.layers import create_act_layer, set_layer_config


def test_activation_matches_its_scriptable_variant():
    x = torch.rand(8)
    eager = create_act_layer("silu")(x)
    with set_layer_config(scriptable=True):
        scripted_kind = create_act_layer("silu")(x)
    torch.testing.assert_close(eager, scripted_kind)
"""

OWN = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x * 2 + 1


def build(scriptable=False):
    model = Net()
    if scriptable:
        model = torch.jit.script(model)
    return model


def build_layers(name, scriptable=False):
    import timm

    return timm.create_model(name, scriptable=scriptable)


def main():
    print(build(scriptable=True)(torch.arange(3.0)).tolist())


def layers():
    return build_layers("resnet18", scriptable=True)


if __name__ == "__main__":
    main()
"""


def _mig144(tmp_path, *intent: str) -> list[dict]:
    run = run_cli(
        ["scan", ".", "--no-cache", "--format", "json", "--select", "MIG144", *intent],
        cwd=tmp_path,
    )
    assert run.code in (0, 1), run.stderr
    return run.json()["findings"]


def _apply(tmp_path, *intent: str) -> None:
    args = ["apply", ".", "--no-cache", "--unsafe-fixes", "--allow-dirty", *intent]
    run = run_cli(args, cwd=tmp_path)
    assert run.code in (0, 1), run.stdout + run.stderr


def test_timm_switch_in_a_comparing_test_is_reported_not_removed(tmp_path):
    write_tree(tmp_path, {"tests/test_act.py": TIMM_TEST})
    for intent in ((), ("--intent", "drop")):
        found = _mig144(tmp_path, *intent)
        assert [(f["line"], f["fix"]) for f in found] == [(8, "assisted")], intent
        assert "compare one with itself" in found[0]["message"]
    _apply(tmp_path, "--intent", "drop")
    assert (tmp_path / "tests/test_act.py").read_text(encoding="utf-8") == TIMM_TEST


def test_own_switch_that_only_scripts_goes_under_drop(tmp_path):
    write_tree(tmp_path, {"app.py": OWN})
    # Without the intent only timm's own switch (line 19) is reported, not the calls of the
    # repository's functions.
    assert [f["line"] for f in _mig144(tmp_path)] == [19]
    found = {f["line"]: f for f in _mig144(tmp_path, "--intent", "drop")}
    assert found[23]["fix"] == "auto" and "only turns on `torch.jit`" in found[23]["message"]
    assert found[27]["fix"] == "assisted"
    assert "passes `scriptable` on to `timm.create_model`" in found[27]["message"]

    _apply(tmp_path, "--intent", "drop")
    text = (tmp_path / "app.py").read_text(encoding="utf-8")
    assert "print(build()(torch.arange(3.0)).tolist())" in text
    assert 'build_layers("resnet18", scriptable=True)' in text


@pytest.mark.slow  # two torch processes: ~6 s CPU
def test_own_switch_dropped_under_drop_computes_the_same(tmp_path):
    write_tree(tmp_path, {"app.py": OWN})
    before = _run(tmp_path)
    _apply(tmp_path, "--intent", "drop")
    assert _run(tmp_path) == before == "[1.0, 3.0, 5.0]"


def test_own_switch_that_selects_code_stays(tmp_path):
    source = textwrap.dedent(
        """\
        import torch


        def build(scriptable=False):
            if scriptable:
                return torch.nn.ReLU()
            return torch.nn.SiLU()


        def needed(scriptable):
            return torch.jit.script(torch.nn.ReLU()) if scriptable else torch.nn.ReLU()


        a = build(scriptable=True)
        b = needed(scriptable=True)
        """
    )
    write_tree(tmp_path, {"m.py": source})
    found = _mig144(tmp_path, "--intent", "drop")
    assert [(f["line"], f["fix"]) for f in found] == [(14, "assisted"), (15, "assisted")]
    assert "also steers code other than `torch.jit`" in found[0]["message"]
    assert "has no False default" in found[1]["message"]
    _apply(tmp_path, "--intent", "drop", "--select", "MIG144")
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == source


def _run(folder) -> str:
    proc = subprocess.run(
        [sys.executable, "app.py"], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()
