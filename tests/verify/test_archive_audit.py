"""Issue 29: archives and models that ran code without --trust-archive.

Each hostile archive is a real one (``torch.jit.save`` / ``torch.export.save``) rewritten
with zipfile; each test checks that torch itself runs the hostile part (the archive is a
real attack) and that ``migrate`` refuses it with one line, writes no marker and changes
no byte. The zip bombs run in a fresh interpreter under an address-space limit.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from migrate.verify import (  # noqa: E402
    archive_zip,
    audit,
    batch_worker,
    pt2_audit,
    ray_runner,
    torchscript_lexer,
)
from tests.verify import hostile_archives as ha  # noqa: E402

pytestmark = pytest.mark.verify

X = torch.zeros(3)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return ha.base_archive(tmp_path_factory.mktemp("base"))


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _args(command: str, archive: Path, tmp_path: Path) -> list:
    if command == "convert":
        return ["convert", archive, "--input-shape", "3", "-o", tmp_path / "out"]
    return ["verify", archive, "--input-shape", "3", "--device", "cpu", "--samples", "0"]


def refused(result) -> str:
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: audit: ") and "Traceback" not in result.output
    return line


def ran(archive: Path) -> None:
    """Control: torch itself runs the hostile part of ``archive``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.load(str(archive))(X)


# --------------------------------------------------------------------------- the three bypasses


@pytest.mark.parametrize("command", ["verify", "convert"])
def test_getattr_torch_save_is_refused(base, invoke, tmp_path, command):
    marker = tmp_path / "marker"
    archive = ha.with_forward(base, tmp_path / "save.pt", f'getattr(torch, "save")(x, "{marker}")')
    before = snapshot(tmp_path)
    line = refused(invoke(*_args(command, archive, tmp_path)))
    assert f"getattr(torch, 'save') in PlusOne.forward ({ha.code_label(base)}:" in line
    assert "dynamic attribute access on a module" in line
    assert snapshot(tmp_path) == before and not marker.exists()
    ran(archive)
    assert marker.exists()  # the archive was a real attack


def test_getattr_from_file_fill_leaves_the_victim_unchanged(base, invoke, tmp_path):
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"original")
    body = (
        f's = getattr(torch, "from_file")("{victim}", True, 4, dtype=0)\n'
        "x = torch.add(x, torch.sum((s).fill_(66)))"  # the mapped file's bytes become "B"
    )
    archive = ha.with_forward(base, tmp_path / "from_file.pt", body)
    line = refused(invoke(*_args("verify", archive, tmp_path)))
    assert "getattr(torch, 'from_file')" in line
    assert victim.read_bytes() == b"original"
    ran(archive)
    assert victim.read_bytes() == b"BBBBinal"


def test_lone_carriage_return_in_a_comment_is_refused(base, invoke, tmp_path):
    marker = tmp_path / "marker"
    # Python's tokenizer ends the comment at \r and reads the """ block as a string;
    # TorchScript's lexer ends it at \n and runs the torch.save line.
    body = f'# x\r    """\ntorch.save(x, "{marker}")\n# """'
    archive = ha.with_forward(base, tmp_path / "cr.pt", body)
    code = ha.forward_code(archive)
    assert "torch.save" in code and not any(
        isinstance(n, ast.Attribute) and n.attr == "save" for n in ast.walk(ast.parse(code))
    )  # what the old audit saw: no call at all
    line = refused(invoke(*_args("verify", archive, tmp_path)))
    at = code.split("\n").index('    # x\r    """') + 1
    assert f"{ha.code_label(base)}:{at}: refusing to read: '\\r' in a comment" in line
    assert not marker.exists()
    ran(archive)
    assert marker.exists()


def test_two_entries_of_one_name_are_refused(base, invoke, tmp_path):
    marker = tmp_path / "marker"
    name = ha.code_name(base)
    hostile = ha.forward_code(
        ha.with_forward(base, tmp_path / "h.pt", f'torch.save(x, "{marker}")')
    )
    archive = ha.rewrite(base, tmp_path / "dup.pt", before={name: hostile})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [n for n in zipfile.ZipFile(archive).namelist() if n == name] == [name, name]
    line = refused(invoke(*_args("convert", archive, tmp_path)))
    assert f"two entries named {name!r}" in line
    assert not marker.exists() and not (tmp_path / "out").exists()
    ran(archive)  # torch loads the first entry, zipfile.read the last
    assert marker.exists()


def test_names_are_compared_without_case(base, tmp_path):
    name = ha.code_name(base)
    upper = name.replace("code/", "CODE/").replace(".py", ".PY")
    # torch finds code/__torch__.py under any case, so that entry is audited as code ...
    moved = ha.rewrite(base, tmp_path / "upper.pt", rename={name: upper})
    ran(moved)
    assert audit.audit_archive(moved) == [upper]
    # ... and two names differing in case are two entries of one name.
    both = ha.rewrite(base, tmp_path / "both.pt", before={name: b"x = 1\n"}, rename={name: upper})
    with pytest.raises(archive_zip.ArchiveUnreadable, match="two entries named"):
        audit.audit_archive(both)


# --------------------------------------------------------------------------- bombs and limits


@pytest.mark.parametrize(("entry", "command"), [("code", "verify"), ("data/0", "convert")])
def test_zip_bomb_is_one_line_without_memory(base, tmp_path, entry, command):
    entry = ha.code_label(base) if entry == "code" else entry
    archive = ha.with_bomb(base, tmp_path / "bomb.pt", entry, 3 << 30)
    assert archive.stat().st_size < 4 << 20  # 3 GiB in under 4 MB
    proc, peak_mib = ha.run_cli(_args(command, archive, tmp_path), tmp_path, memory_limit=5 << 30)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: audit: {archive}: refusing to read: ")
    assert f"{entry} expands " in line and "zip bomb" in line
    assert "Traceback" not in proc.stdout + proc.stderr
    assert peak_mib is not None and peak_mib < 1024, peak_mib
    assert not (tmp_path / "out").exists()


def test_inputs_file_bomb_is_refused_before_torch_reads_it(base, invoke, tmp_path):
    plain = tmp_path / "inputs.pt"
    torch.save((torch.zeros(3),), plain)
    bomb = ha.with_bomb(plain, tmp_path / "bomb_inputs.pt", "data/0", 512 << 20)
    result = invoke("verify", base, "--inputs", bomb, "--device", "cpu", "--samples", "0")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: inputs: {bomb}: refusing to read: ") and "zip bomb" in line


def test_data_total_limit_is_configurable_and_kept_with_trust(base, invoke, monkeypatch, tmp_path):
    monkeypatch.setenv(archive_zip.DATA_LIMIT_ENV, "8")
    result = invoke(*_args("verify", base, tmp_path), "--trust-archive")
    assert result.exit_code == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error: audit: ")]
    assert "data/ entries declare 12 bytes, over the limit of 8" in line
    monkeypatch.setenv(archive_zip.DATA_LIMIT_ENV, "1K")
    assert audit.audit_archive(base)


def test_oversized_code_entry_is_refused_before_reading(base, tmp_path, monkeypatch):
    monkeypatch.setattr(archive_zip, "MAX_CODE_BYTES", 100)
    with pytest.raises(
        archive_zip.ArchiveUnreadable,
        match=r"data.pkl declares \d+ bytes \(over the limit of 100 bytes\)",
    ):
        audit.audit_archive(base)


# --------------------------------------------------------------------------- the code rules


SRC = "class A(Module):\n  def forward(self, x: Tensor) -> Tensor:\n    {}\n    return x\n"


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ('getattr(self, "0")', []),
        ("y = CONSTANTS.c0", []),
        ('s = "a#b"  # c', []),
        ('getattr(x, "untyped_storage")()', [("getattr(x, 'untyped_storage')", "A.forward")]),
        ("getattr(x, name)", [("getattr", "A.forward")]),
        ('getattr(ops.mylib, "up")(x)', [("getattr(ops.mylib, 'up')", "A.forward")]),
        ('t = torch\n    getattr(t, "save")(x, "p")', [("getattr(t, 'save')", "A.forward")]),
        ("t = ops.mylib\n    t.upload(x)", [("ops.mylib.upload", "A.forward")]),
        ("o = ops\n    o.mylib.upload(x)", [("ops.mylib.upload", "A.forward")]),
        ("f(torch)", [("torch", "A.forward")]),
        ("g = getattr", [("getattr", "A.forward")]),
        ('math.save(x, "p")', [("math.save", "A.forward")]),
        ('torch.rpc_async("w", f)', [("torch.rpc_async", "A.forward")]),
    ],
)
def test_audit_rules_follow_aliases_and_getattr(body, found):
    got = [(f.op, f.method) for f in audit.audit_source(SRC.format(body), "code/x.py")]
    assert got == found


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("y = x\x0c", "the character '\\x0c' outside a string"),
        ("y = x\r", "a carriage return outside a string"),
        ("y = x  # type: Tensor", "a '# type:' comment"),
        ("y = 'open", "a string that does not end"),
        ("y = x  # caf\u00e9", "in a comment"),
        ('print(f"{x}")', "does not parse"),  # TorchScript has no f-strings either
    ],
)
def test_what_the_two_readers_could_read_apart_is_refused(body, message):
    with pytest.raises(
        archive_zip.ArchiveUnreadable, match=message.replace("\\", "\\\\").replace("(", r"\(")
    ):
        audit.audit_source(SRC.format(body), "code/x.py")


def test_strings_are_found_with_torchscripts_rules():
    text = 'a = "x\\"#y"\nb = """q\n"r"""  # """\nc = 1\n'
    assert (
        torchscript_lexer.torchscript_reading(text, "f")
        == "a = 'x\\\\\"#y'\nb = 'q\\n\"r'  \nc = 1\n"
    )


# --------------------------------------------------------------------------- .pt2 candidates


def test_pt2_candidate_with_a_pickled_weight_is_refused(base, verify_json, tmp_path):
    marker = tmp_path / "marker"
    pt2 = ha.pt2_with_pickled_weight(tmp_path, f"touch {marker}")
    code, report, result = verify_json(
        base, "--input-shape", "2x3", "--device", "cpu", "--samples", "0",
        "--no-default-candidates", "--candidate", pt2,
    )  # fmt: skip
    assert report is not None, result.output
    assert report["verdict"] != "pass" and code != 0
    (cell,) = [c for c in report["results"] if c["candidate"] == pt2.name]
    assert cell["error"]["stage"] == "audit"
    assert (
        "w is a pickled tensor (torch.export.load unpickles it without weights_only)"
        in (cell["error"]["message"])
    )
    assert not marker.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.load(str(pt2))  # control: torch runs the pickle, and the weight
    assert marker.exists()  # it returns is the right one (the old verdict was PASS)
    torch.testing.assert_close(ep.module()(torch.zeros(2, 3)), torch.ones(2, 3))


@pytest.fixture(scope="module")
def pt2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pt2")
    path = folder / "plain.pt2"

    class Dyn(torch.nn.Module):
        def forward(self, x):
            return x * x.shape[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dim = torch.export.Dim("b", min=2)
        ep = torch.export.export(Dyn(), (torch.zeros(4, 3),), dynamic_shapes=({0: dim},))
        torch.export.save(ep, str(path))
    return path


def _model_json(pt2: Path) -> tuple[str, str]:
    with zipfile.ZipFile(pt2) as zf:
        name = next(n for n in zf.namelist() if n.endswith("models/model.json"))
        return name, zf.read(name).decode()


def test_plain_pt2_passes_its_audit(pt2):
    pt2_audit.audit_pt2(pt2)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"torch.ops.aten.mul.Tensor"', '"torch.save"', "the graph target 'torch.save'"),
        ('"torch.ops.aten.mul.Tensor"', '"torch.ops.mylib.up.default"', "graph target"),
        ("Symbol('s", "__import__('os').system('x') + Symbol('s", "holds '__import__'"),
    ],
)
def test_pt2_graph_targets_and_shape_strings_are_checked(pt2, tmp_path, old, new, message):
    name, text = _model_json(pt2)
    assert old in text
    hostile = ha.rewrite(pt2, tmp_path / "h.pt2", replace={name: text.replace(old, new, 1)})
    with pytest.raises(archive_zip.ArchiveUnreadable, match="refusing to load: ") as info:
        pt2_audit.audit_pt2(hostile)
    assert message in str(info.value) and "--trust-archive" in str(info.value)
    pt2_audit.audit_pt2(hostile, trust=True)


def test_pt2_native_code_and_object_constants_are_refused(pt2, tmp_path):
    name, _ = _model_json(pt2)
    root = name.split("/", 1)[0]
    for extra, message in (
        ("data/aotinductor/model/model.so", "AOTInductor code"),
        ("data/constants/opaque_obj_0", "a pickled object constant"),
    ):
        hostile = tmp_path / "extra.pt2"
        with zipfile.ZipFile(pt2) as src, zipfile.ZipFile(hostile, "w") as out:
            for info in src.infolist():
                out.writestr(info, src.read(info))
            out.writestr(f"{root}/{extra}", b"\x80\x04N.")
        with pytest.raises(archive_zip.ArchiveUnreadable, match=message):
            pt2_audit.audit_pt2(hostile)


def test_plain_pickle_check_runs_nothing(tmp_path):
    import io

    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buffer)
    pt2_audit._check_plain_pickle(buffer.getvalue(), "x.pt")
    marker = tmp_path / "marker"
    buffer = io.BytesIO()
    torch.save(ha.RunsOnUnpickle(f"touch {marker}"), buffer)
    with pytest.raises(pt2_audit._Pt2Refusal, match="it names __builtin__.eval"):
        pt2_audit._check_plain_pickle(buffer.getvalue(), "x.pt")
    assert not marker.exists()


# --------------------------------------------------------------------------- worker isolation


@pytest.mark.parametrize("planted", ["typing.py", "migrate/__init__.py"])
def test_convert_folder_never_imports_from_the_current_folder(base, tmp_path, planted):
    marker = tmp_path / "marker"
    work = tmp_path / "work"
    (work / planted).parent.mkdir(parents=True)
    (work / planted).write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    archives = tmp_path / "archives"
    archives.mkdir()
    ha.with_forward(base, archives / "save.pt", f'getattr(torch, "save")(x, "{marker}")')
    proc, _ = ha.run_cli(
        ["convert", archives, "--input-shape", "3", "-o", tmp_path / "out", "--format", "json"],
        work,
    )
    assert not marker.exists(), proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["counts"]["refused"] == 1, summary  # the worker ran, and refused it


def test_worker_path_leaves_out_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), "rel", "/abs/lib", str(tmp_path) + "/"])
    root = str(Path(batch_worker.__file__).resolve().parents[2])
    assert batch_worker.worker_path() == [root, "/abs/lib"]
    cmd = batch_worker.worker_command("job.json", "result.json")
    assert cmd[:3] == [sys.executable, "-I", "-c"] and cmd[-2:] == ["job.json", "result.json"]


def test_ray_starts_from_an_empty_folder(tmp_path, monkeypatch):
    seen = {}

    class FakeRay:
        def is_initialized(self):
            return False

        def init(self, **kwargs):
            seen["cwd"], seen["entries"] = os.getcwd(), os.listdir(".")

    (tmp_path / "typing.py").write_text("")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(tmp_path)
    assert ray_runner._connect(FakeRay(), None, 1, str(empty)) is True
    assert seen["cwd"] == str(empty) and seen["entries"] == []
    assert os.getcwd() == str(tmp_path)
