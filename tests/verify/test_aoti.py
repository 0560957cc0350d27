"""`migrate convert --aoti` / `migrate verify --aoti`: AOTInductor packages of the exported
program. Options refused before torch; a missing C++ compiler named, with the .pte route, before
any conversion (no compile); what stops a package (an operator, the compiler's first error)
named; `--dynamic-batch` as one shared symbol. The real compiles are the slow tests below and
tests/verify/test_aoti_server.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.verify.errors import VerifyError
from migrate.verify.options import check_options

ROOT = Path(__file__).resolve().parents[2]


def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"device": "cuda", "aoti": False}, "--device picks the AOTInductor package's device"),
        ({"device": "mps", "aoti": True}, "built for cpu or cuda[:N]"),
        ({"dynamic_batch": 1}, "the largest batch must be 2 or more"),
        (
            {"dynamic_batch": 8, "dynamic_dims": ["0:0:1:8"], "input_shapes": ["2x4"]},
            "both vary a batch dimension",
        ),
        ({"dynamic_batch": 4, "input_shapes": ["8x3"]}, "input 0 has batch 8, above it"),
    ],
)
def test_aoti_options_are_refused_without_torch(options, says):
    with pytest.raises(VerifyError) as err:
        check_options(**options)
    assert err.value.stage == "usage" and says in err.value.message


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["convert", "model.pt", "--input-shape", "2x4", "--device", "cuda"],
            "error: usage: --device picks the AOTInductor package's device: it needs --aoti",
        ),
        (
            ["convert", "model.pt", "--evidence", "ev.json", "--input-shape", "2x4", "--aoti"],
            "error: usage: --evidence replaces --inputs/--input-shape/--dynamic-dim/"
            "--dynamic-batch",
        ),
        (
            ["verify", "model.pt", "--input-shape", "2x4", "--aoti", "--no-default-candidates"],
            "error: usage: --aoti compiles the exported program: not with --no-default-candidates",
        ),
    ],
)
def test_the_cli_refuses_aoti_misuse_in_one_line(tmp_path, args, line):
    (tmp_path / "model.pt").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    run = _cli(args, tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [line]


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    import torch
    from torch import nn

    folder = tmp_path_factory.mktemp("aoti")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    torch.jit.trace(model, torch.randn(2, 4)).save(str(folder / "model.pt"))
    return folder / "model.pt"


def test_a_missing_compiler_is_named_with_the_pte_route_before_any_work(archive, tmp_path):
    out = tmp_path / "out"
    run = _cli(
        ["convert", str(archive), "--input-shape", "2x4", "--aoti", "-o", str(out)],
        tmp_path,
        CXX="/nonexistent/g++",
    )
    assert run.returncode == 2, run.stdout + run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(
        "error: aoti: AOTInductor needs a C++ compiler: CXX=/nonexistent/g++ is not a working "
        "compiler (install one or set CXX); the .pte route remains: "
    ), line
    assert line.endswith(
        "the .pte route remains: model.pte for ExecuTorch's C++ runtime "
        "(executorch::extension::Module; migrate explain MIG401)"
    ), line
    assert not out.exists()  # said before the archive was converted: nothing written


def _exported():
    import torch
    from torch import nn

    return torch.export.export(nn.Linear(4, 2).eval(), (torch.randn(2, 4),))


@pytest.mark.parametrize(
    ("raised", "says"),
    [
        (
            "LoweringException: NotImplementedError: no lowering\n  target: aten.weird_op.default",
            "operator aten.weird_op.default does not compile",
        ),
        (
            "C++ compile error\n\nCommand:\ng++ /tmp/x/model.cpp -shared\n\nOutput:\n"
            "/tmp/x/model.cpp:12:3: error: 'missing_kernel' was not declared in this scope\n"
            "/tmp/x/model.cpp:20:1: error: expected ';'",
            "the C++ compiler failed: error: 'missing_kernel' was not declared in this scope",
        ),
    ],
)
def test_what_stops_a_package_is_named_with_the_pte_route(monkeypatch, tmp_path, raised, says):
    import torch._inductor

    from migrate.verify import aoti

    def fail(*args, **kwargs):
        raise RuntimeError(raised)

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", fail)
    with pytest.raises(VerifyError) as err:
        aoti.compile_package(_exported(), tmp_path / "m.aoti.pt2", pte="out/m.pte")
    assert err.value.stage == "aoti"
    assert err.value.message.startswith("no AOTInductor package m.aoti.pt2 (forward, cpu): " + says)
    assert "the .pte route remains: m.pte for ExecuTorch's C++ runtime" in err.value.message
    assert not (tmp_path / "m.aoti.pt2").exists()


def test_package_names_cannot_be_taken_for_an_exported_program(tmp_path):
    from migrate.verify import aoti

    assert aoti.package_name("model") == "model.aoti.pt2"
    assert aoti.package_name("model", "encode") == "model.encode.aoti.pt2"
    assert aoti.package_name("model", "forward", "cuda:1") == "model.cuda.aoti.pt2"
    import torch

    torch.export.save(_exported(), str(tmp_path / "model.pt2"))
    assert not aoti.is_package(tmp_path / "model.pt2")


def test_dynamic_batch_is_one_symbol_over_every_tensor():
    import torch

    from migrate.verify import inputs as inp

    example = (torch.randint(0, 9, (1, 8)), torch.ones(1, 8), 3)
    widened, dims = inp.with_dynamic_batch(example, [], 16)
    assert [x.shape[0] for x in widened[:2]] == [2, 2]  # export fixes a batch of 1
    assert torch.equal(widened[0][1], example[0][0])  # the example's rows, repeated
    assert [(d.input, d.label, d.min, d.max) for d in dims] == [
        (0, "batch", 1, 16),
        (1, "batch", 1, 16),
    ]
    shapes = inp.dynamic_shapes_for(widened, dims)
    assert shapes[0][0] is shapes[1][0]  # one Dim: the inputs share their batch
    sized = [s for s in inp.iter_samples(widened, 0, 0, dims) if s.meta["kind"] == "dynamic"]
    assert [(s.args[0].shape[0], s.args[1].shape[0]) for s in sized] == [(1, 1), (8, 8), (16, 16)]
    with pytest.raises(VerifyError, match="first sizes differ"):
        inp.with_dynamic_batch((torch.ones(2, 3), torch.ones(3, 3)), [], 8)


@pytest.mark.slow
def test_convert_and_verify_write_and_check_a_package_per_method(tmp_path):
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.fc(x))

        @torch.jit.export
        def encode(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x) * 2.0

    torch.manual_seed(0)
    torch.jit.script(Encoder().eval()).save(str(tmp_path / "enc.pt"))
    run = _cli(
        ["convert", "enc.pt", "--input-shape", "1x4", "--dynamic-batch", "8", "--aoti", "-o",
         "out", "--format", "json"],
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert sorted(Path(p["path"]).name for p in doc["aoti"]) == [
        "enc.aoti.pt2",
        "enc.encode.aoti.pt2",
    ]
    assert all(p["device"] == "cpu" and p["compile_s"] > 0 for p in doc["aoti"])

    run = _cli(
        ["verify", "enc.pt", "--input-shape", "1x4", "--dynamic-batch", "8", "--device", "cpu",
         "--candidate", "out/enc.aoti.pt2", "--bench", "--format", "json"],
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 2  # a package runs native code: not loaded without trust
    (cell,) = json.loads(run.stdout)["results"]
    assert cell["error"]["stage"] == "audit" and "--trust-archive" in cell["error"]["message"]

    run = _cli(
        ["verify", "enc.pt", "--input-shape", "1x4", "--dynamic-batch", "8", "--device", "cpu",
         "--candidate", "out/enc.aoti.pt2", "--trust-archive", "--bench", "--format", "json"],
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (cell,) = json.loads(run.stdout)["results"]
    # The example (its batch of 1 doubled), 3 random samples, batches 1, 4 and 8.
    assert cell["kind"] == "aoti" and cell["status"] == "pass" and cell["samples"] == 7
    assert cell["bench"]["median_ms"] > 0 and cell["bench"]["load_ms"] > 0

    # verify --aoti compiles its own packages, one per method, beside the other candidates.
    run = _cli(
        ["verify", "enc.pt", "--input-shape", "2x4", "--device", "cpu", "--aoti", "--samples",
         "1", "--out", "checked", "--format", "json"],
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    cells = {c["candidate"]: c for c in report["results"]}
    assert cells["aoti"]["status"] == cells["aoti:encode"]["status"] == "pass"
    assert any(n.startswith("compiled for cpu in ") for n in cells["aoti"]["notes"])
    assert Path(report["artifacts"]["aoti:encode"]).name == "enc.encode.aoti.pt2"


@pytest.mark.slow
def test_a_program_that_does_not_lower_still_gets_its_package(archive, tmp_path, monkeypatch):
    from migrate.verify import convert as conv
    from migrate.verify.convert_flow import run_convert

    def refuse(program, backend):
        raise RuntimeError("no kernel for this operator in ExecuTorch")

    monkeypatch.setattr(conv, "_lower_once", refuse)
    res = run_convert(str(archive), None, ["2x4"], tmp_path / "out", trust=True, aoti=True)
    assert res.pte is None and res.mismatch is None
    assert res.pte_error is not None and res.pte_error.stage == "lower"
    assert [p.path.name for p in res.packages] == ["model.aoti.pt2"]
    assert sorted(f.name for f in (tmp_path / "out").iterdir()) == ["model.aoti.pt2", "model.pt2"]
    assert res.to_json()["verdict"] == "error"
