"""What a scanned tree, an evidence file, a manifest or an output folder carries cannot run code,
lower the archive audit, be written through or hide a finding; every bad input is one line
naming its file (docs/security.md, "What each input can do")."""

from __future__ import annotations

import ast
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

from migrate.record.boot._migrate_recorder import line_digest
from tests.scan_support import clean_env, run_cli
from tests.test_hostile import git

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
ROOT = Path(__file__).resolve().parents[1]

SOURCE = (
    "import torch\n"
    "\n"
    "\n"
    "class Net(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x\n"
    "\n"
    "\n"
    "model = torch.jit.script(Net().eval())\n"
    'model.save("m.pt")\n'
)
CAPTURE_LINE = 9
PAYLOAD = '__import__("os").system("touch PWNED")'
UNUSED = "import torch\n\n\n@torch.jit.unused\ndef helper(x):\n    return x\n"  # a safe fix


def _tensor(shape=(8, 16), dtype="float32", device="cpu") -> dict:
    return {"t": "tensor", "shape": list(shape), "dtype": dtype, "device": device}


def _site(**calls) -> dict:
    call = {"args": [_tensor()], "kwargs": {}, "count": 2, "axes": [[[8], [16]]], **calls}
    return {
        "path": "m.py",
        "line": CAPTURE_LINE,
        "end_line": CAPTURE_LINE,
        "digest": line_digest(SOURCE.splitlines()[CAPTURE_LINE - 1]),
        "api": "torch.jit.script",
        "count": 1,
        "captured": [{"value": {"kind": "module", "class": "m.Net"}, "count": 1}],
        "examples": [],
        "calls": [call],
        "saved": [],
        "loaded": [],
        "saves_of": [],
    }


def _evidence(*sites: dict) -> dict:
    return {"version": 1, "tool": "torchscript-migrate", "runs": [], "sites": list(sites)}


def _tree(folder: Path, evidence: dict | str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "m.py").write_text(SOURCE)
    if evidence is not None:
        (folder / ".migrate").mkdir(exist_ok=True)
        text = evidence if isinstance(evidence, str) else json.dumps(evidence)
        (folder / ".migrate" / "evidence.json").write_text(text)
    return folder


def _cli(args: list[str], cwd: Path, tmp_path: Path):
    run = run_cli(args, cwd, clean_env(tmp_path.parent / f"{tmp_path.name}-env"))
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    return run


def _no_payload(source: str) -> None:
    """The payload is not code: no name `__import__`, no `.system` attribute."""
    for node in ast.walk(ast.parse(source)):
        assert not (isinstance(node, ast.Name) and node.id == "__import__"), source
        assert not (isinstance(node, ast.Attribute) and node.attr == "system"), source


# --------------------------------------------------------------------------- evidence is data


def _poisoned(field: str) -> dict:
    """A valid site with PAYLOAD in one field."""
    site = _site()
    call = site["calls"][0]
    if field == "shape":
        call["args"][0]["shape"] = [f"8, {PAYLOAD}", 16]
    elif field == "axes":
        call["axes"] = [[[8, f"8, {PAYLOAD}"], [16]]]
    elif field == "dtype":
        call["args"][0]["dtype"] = f"float16, device={PAYLOAD}"
    elif field == "device":
        call["args"][0]["device"] = f'cpu", x={PAYLOAD}, y="'
    elif field == "dict key":
        call["args"] = [{"t": "dict", "items": {f'x": {PAYLOAD}, "y': _tensor()}}]
    elif field == "kwargs key":
        call["kwargs"] = {f'x": {PAYLOAD}, "y': _tensor()}
        call["axes"] = [[[8], [16]], [[8], [16]]]
    elif field == "class name":
        site["captured"][0]["value"]["class"] = PAYLOAD
    elif field == "tuple kind":
        call["args"] = [{"t": f"tuple{PAYLOAD}", "items": [_tensor()]}]
    elif field == "object type":
        call["args"] = [{"t": "object", "type": PAYLOAD}]
    elif field == "saved path":
        site["saved"] = [f"m.pt'); {PAYLOAD}; ('"]
    return _evidence(site)


FIELDS = [
    "shape",
    "axes",
    "dtype",
    "device",
    "dict key",
    "kwargs key",
    "class name",
    "tuple kind",
    "object type",
    "saved path",
]


@pytest.mark.parametrize("field", FIELDS)
def test_hostile_evidence_is_refused_or_inert(tmp_path, field):
    tree = _tree(tmp_path / "repo", _poisoned(field))
    run = _cli(["apply", ".", "--unsafe-fixes", "--intent", "drop", "--no-cache"], tree, tmp_path)
    written = (tree / "m.py").read_text()
    _no_payload(written)
    assert not (tree / "PWNED").exists()
    if run.code == 2:
        # Refused: one line naming the file, and nothing written.
        assert run.stderr.count("\n") == 1, run.stderr
        assert ".migrate/evidence.json" in run.stderr
        assert written == SOURCE
    else:
        assert run.code in (0, 1), run.stderr


def test_benign_evidence_still_gives_example_inputs(tmp_path):
    """The same site without a payload is used: the guard refuses values, not evidence."""
    tree = _tree(tmp_path / "repo", _evidence(_site()))
    run = _cli(["apply", ".", "--unsafe-fixes", "--intent", "drop", "--no-cache"], tree, tmp_path)
    assert run.code == 0, run.stdout + run.stderr
    written = (tree / "m.py").read_text()
    assert "torch.randn(8, 16, generator=torch.Generator().manual_seed(0))" in written
    call = next(n for n in ast.walk(ast.parse(written)) if isinstance(n, ast.Call))
    assert ast.unparse(call.func) == "torch.export.export"
    assert isinstance(call.args[1], ast.Tuple) and len(call.args[1].elts) == 1


def test_the_code_writer_renders_only_typed_values():
    """Behind the schema: values that reach code are ints, allow-listed dtypes and devices,
    identifier keys; anything else gives no code at all."""
    from migrate.record.hooks import Calls, _auto_spec, _Writer

    def render(desc: dict) -> str | None:
        entry = {"args": [desc], "kwargs": {}, "axes": [[[8], [16]]] * 2, "count": 1}
        return _Writer(lambda q: q, Calls(entry, "")).value({"t": "tuple", "items": [desc]})

    assert render(_tensor()) == "(torch.randn(8, 16, generator=torch.Generator().manual_seed(0)),)"
    assert render(_tensor(dtype="int64", device="cuda")) == (
        '(torch.zeros(8, 16, dtype=torch.int64, device="cuda"),)'
    )
    for hostile in (
        _tensor(shape=[f"8, {PAYLOAD}", 16]),
        _tensor(shape=[True, 16]),
        _tensor(dtype=f"float32), {PAYLOAD}"),
        _tensor(dtype="Tensor"),
        _tensor(device=f'cpu"); {PAYLOAD}; ("'),
        {"t": "dict", "items": {f'x": {PAYLOAD}, "y': _tensor()}},
        {"t": "dict", "items": {"class": _tensor()}},
    ):
        assert render(hostile) is None, hostile
    spec = _auto_spec(lambda q: q, [{"t": "dict", "items": {f'x": {PAYLOAD}': _tensor()}}], {})
    assert spec is None


DEEP = '{"version": 1, "tool": "torchscript-migrate", "runs": [], "sites": ' + "[" * 100_000


@pytest.mark.parametrize(
    ("evidence", "cause"),
    [
        (_evidence(5), "sites[0]: expected an object, not 5"),
        ({**_evidence(), "sites": [{k: v for k, v in _site().items() if k != "api"}]}, "`api`"),
        (_evidence({**_site(), "line": "9"}), "sites[0].line: expected an integer"),
        (DEEP, "nested too deeply"),
        (
            _evidence({**_site(), "calls": [{**_site()["calls"][0], "args": [{"t": "tensor"}]}]}),
            "sites[0].calls[0].args[0]",
        ),
        ("[1, 2]", "not an evidence file (no `sites` list)"),
    ],
    ids=["site-not-an-object", "missing-key", "wrong-type", "deep", "tensor-keys", "top-level"],
)
def test_malformed_evidence_is_one_line_naming_the_file(tmp_path, evidence, cause):
    tree = _tree(tmp_path / "repo", evidence)
    for command in (["scan", "."], ["apply", ".", "--dry-run"]):
        run = _cli([*command, "--no-cache"], tree, tmp_path)
        assert run.code == 2, run.stdout + run.stderr
        assert run.stderr.count("\n") == 1, run.stderr
        assert run.stderr.startswith("error: ") and ".migrate/evidence.json: " in run.stderr
        assert cause in run.stderr
    assert (tree / "m.py").read_text() == SOURCE


# --------------------------------------------------------------------------- where evidence comes from


def _found(run) -> str:
    return next(f["message"] for f in run.json()["findings"] if f["line"] == CAPTURE_LINE)


def test_evidence_in_a_parent_folder_is_not_read(tmp_path):
    """A tree outside any git checkout (an unpacked tarball) reads its own `.migrate/` only:
    one planted in a shared parent folder is not evidence for it."""
    parent = _tree(tmp_path / "shared", _evidence(_site()))
    tree = _tree(parent / "unpacked", None)
    run = _cli(["scan", ".", "--format", "json", "--no-cache"], tree, tmp_path)
    assert run.code == 1, run.stderr
    assert "example inputs generated" not in _found(run)
    assert "evidence" not in run.json()["summary"]


@pytest.mark.skipif(sys.platform == "win32", reason="git in a temp folder")
def test_committed_evidence_is_read_only_when_named(tmp_path):
    tree = _tree(tmp_path / "repo", _evidence(_site()))
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "evidence")
    scan = ["scan", ".", "--format", "json", "--no-cache", "--intent", "drop"]
    run = _cli(scan, tree, tmp_path)
    assert "example inputs generated" not in _found(run)
    assert "evidence" not in run.json()["summary"]
    assert run.stderr == (
        "note: .migrate/evidence.json is committed to the repository, so it is not read by "
        "default; pass `--evidence .migrate/evidence.json` to use it\n"
    )
    run = _cli([*scan, "--evidence", ".migrate/evidence.json"], tree, tmp_path)
    assert "example inputs generated" in _found(run)
    assert run.json()["summary"]["evidence"] == str(tree / ".migrate" / "evidence.json")
    assert run.stderr == ""


def test_the_report_says_which_evidence_it_read(tmp_path):
    """Evidence `migrate record` wrote here (not committed): read, and every report says so."""
    tree = _tree(tmp_path / "repo", _evidence(_site()))
    where = str(tree / ".migrate" / "evidence.json")
    run = _cli(["scan", ".", "--format", "json", "--no-cache"], tree, tmp_path)
    assert run.json()["summary"]["evidence"] == where
    jsonschema = pytest.importorskip("jsonschema")
    from tests.test_formats import json_schema

    jsonschema.Draft202012Validator(json_schema()).validate(run.json())
    run = _cli(["scan", ".", "--no-cache"], tree, tmp_path)
    assert f"Evidence: {where} (what `migrate record` saw)" in run.stdout.splitlines()
    run = _cli(["apply", ".", "--dry-run", "--no-cache"], tree, tmp_path)
    assert f"Evidence: {where} (what `migrate record` saw)" in run.stdout.splitlines()
    # Without evidence, no such line.
    run = _cli(["scan", ".", "--no-cache"], _tree(tmp_path / "plain", None), tmp_path)
    assert "Evidence" not in run.stdout


# --------------------------------------------------------------------------- manifests


def test_a_manifest_row_cannot_trust_an_archive(tmp_path, capsys):
    from migrate.verify import batch_jobs

    with zipfile.ZipFile(tmp_path / "encoder.pt", "w") as archive:
        archive.writestr("encoder/data.pkl", b"")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text('{"archive": "encoder.pt", "trust": true}\n')
    jobs = batch_jobs.build_jobs(
        "convert", None, manifest, tmp_path / "out", {"trust": False}, None
    )
    assert [job.settings["trust"] for job in jobs] == [False]
    assert capsys.readouterr().err == (
        f"warning: {manifest}:1: `trust` ignored: only --trust-archive on the command line "
        "loads an archive without its audit\n"
    )
    # The command line's flag still trusts, and a row may ask for the audit back.
    jobs = batch_jobs.build_jobs("convert", None, manifest, tmp_path / "out", {"trust": True}, None)
    assert [job.settings["trust"] for job in jobs] == [True]
    manifest.write_text('{"archive": "encoder.pt", "trust": false}\n')
    jobs = batch_jobs.build_jobs("convert", None, manifest, tmp_path / "out", {"trust": True}, None)
    assert [job.settings["trust"] for job in jobs] == [False]


@pytest.mark.parametrize(
    ("row", "cause"),
    [
        ('{"archive": "a.pt", "samples": 1e400}', "`samples` must be a finite number"),
        ('{"archive": "a.pt", "timeout": NaN}', "`timeout` must be a finite number"),
        ('{"archive": "a\\u0000.pt"}', "`archive` must be a path"),
        ('{"archive": ["a.pt"]}', "`archive` must be a path"),
        ('{"archive": "a.pt", "devices": {"cpu": 1}}', "`devices` must be"),
        ('{"archive": "a.pt", "method": 5}', "`method` must be a string"),
    ],
)
def test_a_malformed_manifest_row_is_one_line_naming_it(tmp_path, row, cause):
    from migrate.verify import batch_jobs
    from migrate.verify.errors import VerifyError

    manifest = tmp_path / "m.jsonl"
    manifest.write_text(row + "\n")
    with pytest.raises(VerifyError) as caught:
        batch_jobs.build_jobs("convert", None, manifest, tmp_path / "out", {}, None)
    assert caught.value.message.startswith(f"{manifest}:1: "), caught.value.message
    assert cause in caught.value.message


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("pyproject", "cause"),
    [
        ("[tool]\nruff = 5\n", "[tool] ruff must be a table"),
        ("tool = 5\n", "`tool` must be a table"),
        ('[tool.ruff]\nline-length = "wide"\n', "[tool.ruff] line-length must be an integer"),
        ("[tool.black]\nline-length = true\n", "[tool.black] line-length must be an integer"),
        ("[tool.ruff]\nline-length = 0\n", "[tool.ruff] line-length must be an integer from 1"),
    ],
)
def test_a_malformed_linter_setting_is_one_line_naming_the_file(tmp_path, pyproject, cause):
    """apply reads the project's line length to wrap what it writes: a setting of the wrong
    type stops it before any file is written, in one line naming the file."""
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "m.py").write_text(UNUSED)
    (tree / "pyproject.toml").write_text(pyproject)
    run = _cli(["apply", ".", "--no-cache"], tree, tmp_path)
    assert run.code == 2, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith(f"error: {tree / 'pyproject.toml'}: {cause}")
    assert run.stderr.endswith("; not read\n")
    assert (tree / "m.py").read_text() == UNUSED


# --------------------------------------------------------------------------- outputs


@posix
@pytest.mark.parametrize(
    "command",
    [
        ["scan", ".", "--format", "json", "-o", "out.txt"],
        ["scan", ".", "-o", "out.txt"],
        ["report", ".", "--format", "html", "-o", "out.txt"],
        ["report", ".", "-o", "out.txt"],
    ],
)
def test_reports_are_never_written_through_a_symlink(tmp_path, command):
    tree = _tree(tmp_path / "repo", None)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tree / "out.txt").symlink_to(victim)
    run = _cli(command, tree, tmp_path)
    assert run.code == 2, run.stdout + run.stderr
    assert run.stderr == "error: out.txt: is a symlink; not written through it\n"
    assert victim.read_text() == "precious\n"
    assert (tree / "out.txt").is_symlink()


def test_reports_are_written_whole(tmp_path):
    tree = _tree(tmp_path / "repo", None)
    run = _cli(["scan", ".", "--format", "json", "-o", "out.json"], tree, tmp_path)
    assert run.code == 1, run.stderr
    assert json.loads((tree / "out.json").read_text())["summary"]["findings"] == 2
    assert sorted(p.name for p in tree.iterdir()) == ["m.py", "out.json"]  # no temp file left


def _fake_archive(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{path.stem}/data.pkl", b"")
    return path


@posix
@pytest.mark.parametrize("name", ["model.pte", "model.pt2"])
def test_convert_refuses_an_output_that_is_a_symlink(tmp_path, name):
    pytest.importorskip("torch")
    tree = tmp_path / "checkout"
    tree.mkdir()
    _fake_archive(tree / "model.pt")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tree / name).symlink_to(victim)
    run = _cli(["convert", "model.pt", "--input-shape", "2x16"], tree, tmp_path)
    assert run.code == 2, run.stdout + run.stderr
    assert run.stderr == f"error: output: {name}: is a symlink; not written through it\n"
    assert victim.read_text() == "precious\n"


@posix
def test_verify_out_refuses_a_report_that_is_a_symlink(tmp_path):
    pytest.importorskip("torch")
    _fake_archive(tmp_path / "model.pt")
    out = tmp_path / "D"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (out / "report.json").symlink_to(victim)
    run = _cli(["verify", "model.pt", "--input-shape", "2x16", "--out", "D"], tmp_path, tmp_path)
    assert run.code == 2, run.stdout + run.stderr
    assert run.stderr == "error: output: D/report.json: is a symlink; not written through it\n"
    assert victim.read_text() == "precious\n"


@posix
def test_the_shared_writer(tmp_path):
    from migrate.safe_write import UnsafeOutput, make_folder, replacing, write_atomic

    out = make_folder(tmp_path / "out", root=tmp_path / "out")
    target = write_atomic(out / "a.txt", b"one", root=out)
    assert target.read_bytes() == b"one" and os.listdir(out) == ["a.txt"]
    with replacing(out / "b.bin", root=out) as temp:  # for writers that take a path
        assert temp.parent == out and temp.name != "b.bin"
        temp.write_bytes(b"two")
    assert (out / "b.bin").read_bytes() == b"two" and sorted(os.listdir(out)) == ["a.txt", "b.bin"]
    with pytest.raises(RuntimeError), replacing(out / "c.bin", root=out) as temp:
        temp.write_bytes(b"half")
        raise RuntimeError
    assert sorted(os.listdir(out)) == ["a.txt", "b.bin"]  # a failed write leaves nothing
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "link").symlink_to(elsewhere)
    (out / "file").symlink_to(elsewhere / "x")
    for bad in (out / "link" / "deeper" / "x", out / "file"):
        with pytest.raises(UnsafeOutput):
            write_atomic(bad, b"no", root=out)
    with pytest.raises(UnsafeOutput):
        make_folder(out / "link" / "sub", root=out)
    assert os.listdir(elsewhere) == []


@posix
def test_batch_results_are_not_appended_through_a_symlink(tmp_path):
    from migrate.safe_write import UnsafeOutput
    from migrate.verify.batch_results_file import ResultsFile

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "results.jsonl").symlink_to(victim)
    with pytest.raises(UnsafeOutput):
        ResultsFile(tmp_path / "results.jsonl")
    assert victim.read_text() == "precious\n"


@posix
@pytest.mark.parametrize("target", ["elsewhere", "missing/deeper"])
def test_record_never_writes_through_a_migrate_symlink(tmp_path, target):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tree / ".migrate").symlink_to(tmp_path / target)
    run = _cli(["record", "--", sys.executable, "-c", "open('ran', 'w')"], tree, tmp_path)
    assert run.code == 2, run.stdout + run.stderr
    assert run.stderr == "error: .migrate: is a symlink; not written through it\n"
    assert not (tree / "ran").exists()  # refused before the command runs
    assert os.listdir(tmp_path / "elsewhere") == []
    assert not (tmp_path / "missing").exists()


# --------------------------------------------------------------------------- terminal and markup

NAME = "\x1b]0;title\x07<img src=x>.py"
ESCAPED = "\\x1b]0;title\\x07<img src=x>.py"


def _outside_code_spans(markdown: str) -> str:
    return "".join(markdown.split("`")[::2])


@posix
def test_file_names_and_code_reach_the_terminal_escaped(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    source = (
        'import torch\n\nCLEAR = "\x1b[2J"\n\n\n@torch.jit.unused\ndef helper(x):\n    return x\n'
    )
    (tree / NAME).write_text(source)
    for command in (
        ["scan", "."],
        ["scan", ".", "--format", "github"],
        ["apply", ".", "--dry-run"],
    ):
        run = _cli([*command, "--no-cache"], tree, tmp_path)
        assert run.code == 1, run.stderr
        out = run.stdout + run.stderr
        assert "\x1b" not in out and "\x07" not in out, out
        assert ESCAPED in out
    assert 'CLEAR = "\\x1b[2J"' in out  # the diff's context line, escaped
    run = _cli(["report", "."], tree, tmp_path)
    assert run.code == 0, run.stderr
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    assert "<img" not in _outside_code_spans(run.stdout)
    assert "| \\x1b]0;title\\x07&lt;img src=x&gt;.py | 1 |" in run.stdout
