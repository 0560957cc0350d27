"""Issue 13: real-archive patterns through the recovery ladder, multi-method archives,
the archive audit, and the resource and bad-input guards of verify/convert (issue 15)."""

from __future__ import annotations

import json
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from migrate.verify import audit  # noqa: E402
from migrate.verify.specialisation import NotShapeDerived, specialise_scalars  # noqa: E402
from tests.verify import recovery_models as rm  # noqa: E402

pytestmark = pytest.mark.verify


def _save(module, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(module, str(path))
    return path


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """``{name: (archive, inputs)}`` for every row built by :mod:`recovery_models`."""
    root = tmp_path_factory.mktemp("rows")
    out = {}
    factories = {**rm.ROWS, "arg_loop": rm.arg_loop, "value_loop": rm.value_loop}
    for name, factory in factories.items():
        ts, example = factory()
        inputs = root / f"{name}_inputs.pt"
        torch.save(example, inputs)
        out[name] = (_save(ts, root / f"{name}.pt"), inputs)
    return out


@pytest.fixture(scope="module")
def verify_row(rows, invoke, tmp_path_factory):
    cache = {}

    def _run(name, *extra):
        key = (name, extra)
        if key not in cache:
            path, inputs = rows[name]
            out = tmp_path_factory.mktemp(name)
            result = invoke(
                "verify", path, "--inputs", inputs, "--samples", "1", "--device", "cpu",
                "--format", "json", "--out", out, *extra,
            )  # fmt: skip
            report = json.loads(result.stdout) if result.stdout.startswith("{") else None
            cache[key] = (result, report, out)
        return cache[key]

    return _run


# --------------------------------------------------------------------------- the table's rows

ROW_PATHS = {
    "position_ids_traced": "converter + scalar specialisation",
    "shape_loop_scripted": "freeze + re-capture",
    "optional_scripted": "freeze + re-capture",
    "list_scripted": "freeze + re-capture",
}
ROW_SPECIALISED = {
    "position_ids_traced": "assumes ids.size(1) == 6",
    "shape_loop_scripted": "1 prim::Loop unrolled",
    "optional_scripted": "mask shape 2x4 (None not accepted)",
    "list_scripted": "xs holds 2 items",
}


@pytest.mark.parametrize(
    "name",
    # position_ids_traced's report is read by two more tests; each other row (a verify
    # through the .pte: 3-5 s of CPU) is marked slow.
    [
        pytest.param(n, marks=() if n == "position_ids_traced" else pytest.mark.slow)
        for n in ROW_PATHS
    ],
)
def test_row_converts_and_verifies_through_pte(verify_row, name):
    result, report, out = verify_row(name)
    assert result.exit_code == 0, result.output
    assert [c["candidate"] for c in report["results"]] == ["exported", "pt2", "pte"]
    assert all(c["status"] == "pass" for c in report["results"]), report["results"]
    assert report["results"][2]["max_abs"] < 1e-5
    (rec,) = report["recovery"]
    assert rec["path"] == ROW_PATHS[name]
    assert any(ROW_SPECIALISED[name] in s for s in rec["specialised"]), rec["specialised"]
    # The step before failed, and says why (or, for scalars read back, was never lowered).
    if name == "position_ids_traced":
        assert rec["attempts"] == [] and "unbacked" in rec["why"]
    else:
        assert rec["attempts"] and rec["attempts"][0]["step"].startswith("converter")
    assert (out / f"{name}.pte").stat().st_size > 0


def test_position_ids_scalars_are_specialised_before_any_lowering(verify_row):
    """The converter's program reads a size back as an unbacked scalar: lowering it would
    fail on the guard after most of its work, so only the specialised program is lowered."""
    _, report, _ = verify_row("position_ids_traced")
    (rec,) = report["recovery"]
    assert rec["attempts"] == []  # no failed lowering of the converter's program paid
    assert rec["why"].startswith("chosen for unbacked symbols") and "scalar(s) back" in rec["why"]
    assert rec["lowering"] == "direct"


def test_specialisation_wrong_for_another_sample_is_a_mismatch(verify_row):
    """An ``int`` loop count unrolled at 3: the archive accepts 4, the program does not."""
    result, report, _ = verify_row("arg_loop")
    assert result.exit_code == 1, result.output
    assert report["verdict"] == "mismatch"
    assert "input1=4" in [s["name"] for s in report["samples"]]
    pte = next(c for c in report["results"] if c["candidate"] == "pte")
    assert pte["status"] == "fail" and pte["worst"]["sample"] == "input1=4"
    assert "steps == 3" in " ".join(report["recovery"][0]["specialised"])


def test_value_dependent_loop_is_one_line_error(verify_row):
    result, _, _ = verify_row("value_loop")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith("error: convert: no recovery converted forward: converter: ")
    assert "freeze + re-capture" in lines[0]


def test_scalar_read_from_tensor_values_is_refused():
    class ValueScalar(torch.nn.Module):
        def forward(self, x):
            return torch.full((2,), x.max().item())

    x = torch.arange(6.0)
    ep = torch.export.export(ValueScalar(), (x,), strict=False)
    with pytest.raises(NotShapeDerived, match="reads the values of input x"):
        specialise_scalars(ep, (x,))


def test_specialisation_refuses_a_declared_dynamic_dimension():
    from migrate.verify import convert as conv

    ts, example = rm.position_ids_traced()
    ep = conv.convert_archive(ts, example).ep
    _, spec = specialise_scalars(ep, example, input_names=["ids"])
    assert spec.shapes == ["ids.size(1) == 6"]
    seq = torch.export.Dim("seq", min=2, max=12)
    with pytest.raises(NotShapeDerived, match=r"fix ids.size\(1\), declared by --dynamic-dim"):
        specialise_scalars(ep, example, ({1: seq},), ["ids"])


# --------------------------------------------------------------------------- multi-method


@pytest.mark.slow  # two methods exported and lowered: ~9 s CPU
def test_multi_method_archive_gives_multi_method_pte(verify_row):
    result, report, out = verify_row("two_methods_scripted")
    assert result.exit_code == 0, result.output
    names = [c["candidate"] for c in report["results"]]
    assert names == ["exported", "pt2", "pte", "exported:encode", "pt2:encode", "pte:encode"]
    assert all(c["status"] == "pass" for c in report["results"])
    assert [r["method"] for r in report["recovery"]] == ["forward", "encode"]  # not _act
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(out / "two_methods_scripted.pte"))
    assert set(program.method_names) == {"forward", "encode"}


def test_convert_method_picks_one(rows, invoke, tmp_path):
    path, inputs = rows["two_methods_scripted"]
    result = invoke("convert", path, "--inputs", inputs, "--method", "encode", "-o", tmp_path)
    assert result.exit_code == 0, result.output
    assert "method encode" in result.stdout
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(tmp_path / "two_methods_scripted.pte"))
    assert set(program.method_names) == {"encode"}
    x = torch.load(inputs)[0]
    got = program.load_method("encode").execute([x])[0]
    ts = torch.jit.load(str(path))
    torch.testing.assert_close(got, ts.encode(x))

    bad = invoke("convert", path, "--inputs", inputs, "--method", "nope", "-o", tmp_path)
    assert bad.exit_code == 2
    assert bad.stderr.strip() == (
        "error: usage: the archive has no method 'nope' (methods: forward, encode)"
    )


# --------------------------------------------------------------------------- hostile archives


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    victim = root / "victim.bin"
    victim.write_bytes(b"original")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = _save(torch.jit.script(rm.Hostile(str(victim))), root / "on_run.pt")
        load = _save(torch.jit.script(rm.HostileOnLoad(str(victim))), root / "on_load.pt")
    return victim, run, load


@pytest.mark.parametrize(
    ("which", "command", "where"),
    [
        ("run", "verify", "Hostile.forward"),
        ("run", "convert", "Hostile.forward"),
        ("load", "verify", "HostileOnLoad.__setstate__"),
    ],
)
def test_hostile_archive_is_refused_before_it_runs(
    hostile, invoke, tmp_path, which, command, where
):
    victim, on_run, on_load = hostile
    archive = on_run if which == "run" else on_load
    args = [command, archive, "--input-shape", "2x3"]
    if command == "convert":
        args += ["-o", tmp_path / "out"]
    result = invoke(*args)
    assert victim.read_bytes() == b"original"
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: audit: {archive}: refusing to load: torch.from_file in ")
    assert where in line and "--trust-archive" in line
    assert not (tmp_path / "out").exists()


def test_trusted_hostile_archive_runs_in_a_temporary_folder(invoke, tmp_path):
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"original")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        archive = _save(torch.jit.script(rm.HostileOnLoad(str(victim))), tmp_path / "on_load.pt")
    result = invoke(
        "verify", archive, "--input-shape", "2x3", "--trust-archive", "--samples", "0",
        "--device", "cpu", "--no-default-candidates", "--candidate", "tests.verify.recovery_models:plus_one",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning: --trust-archive" in result.stderr
    assert victim.read_bytes() == b"BBBBinal"  # its __setstate__ ran: it was trusted


def test_audit_rules():
    def found(code):
        return [(f.op, f.method) for f in audit.audit_source(code, "code/x.py")]

    src = "class A(Module):\n  def forward(self, x: Tensor) -> Tensor:\n    return {}\n"
    assert found(src.format("torch.add(torch.ops.aten.relu(x), 1)")) == []
    assert found(src.format("torch.ops.quantized.linear(x)")) == []
    assert found(src.format("torch.ops.mylib.upload(x)")) == [
        ("torch.ops.mylib.upload", "A.forward")
    ]
    assert found(src.format("ops.mylib.upload(x)")) == [("ops.mylib.upload", "A.forward")]
    assert found(src.format("torch.save(x, 'f')")) == [("torch.save", "A.forward")]
    assert found(src.format("torch.UntypedStorage.from_file('f', True, 4)"))
    assert found(src.format("(x + 1).share_memory_()")) == [("<value>.share_memory_", "A.forward")]
    assert found(src.format("(x).untyped_storage()")) == [("x.untyped_storage", "A.forward")]
    setstate = (
        "class A(Module):\n  def __setstate__(self, s: int) -> NoneType:\n"
        "    self.a = (s)[0]\n    torch.relu(self.a)\n    return None\n"
    )
    assert found(setstate) == [("call torch.relu", "A.__setstate__")]


# --------------------------------------------------------------------------- bad input (issue 15)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--input-shape", "99999999999999999999x3"], "dimension 99999999999999999999 overflows"),
        (["--input-shape", "1x3x100000x100000"], "sample inputs would take"),
        (["--input-shape", "4x4", "--max-input-bytes", "100"], "over the limit of 100 bytes"),
        (["--input-shape", "2x4", "--rtol", "-1"], "--rtol must be >= 0, not -1.0"),
    ],
)
def test_bad_verify_input_is_one_line_usage_error(rows, invoke, args, message):
    path, _ = rows["list_scripted"]
    result = invoke("verify", path, *args)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: usage: ") and message in line


def test_convert_out_naming_a_file_is_usage_error(rows, invoke, tmp_path):
    path, inputs = rows["list_scripted"]
    existing = tmp_path / "taken"
    existing.write_text("keep me")
    result = invoke("convert", path, "--inputs", inputs, "-o", existing)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: usage: -o {existing}: exists and is not a directory"
    assert existing.read_text() == "keep me"


def test_wrong_input_shape_names_the_real_cause(archives, invoke):
    path, _ = archives[("lstm", "script")]
    result = invoke("verify", path, "--input-shape", "2x5x3", "--device", "cpu")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "TorchScript interpreter" not in line
    assert "RuntimeError: input.size(-1) must be equal to input_size. Expected 8, got 3" in line


def test_target_calling_sys_exit_at_import(invoke, tmp_path, monkeypatch):
    (tmp_path / "exits_at_import_13.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.chdir(tmp_path)
    result = invoke("verify", "exits_at_import_13:build", "--input-shape", "2x2")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: load: importing 'exits_at_import_13' called sys.exit(3); nothing was verified"
    )
