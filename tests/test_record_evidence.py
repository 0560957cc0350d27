"""`scan` and `apply` read `migrate record` evidence: each reason only a run can answer gets
its fix from a matching site (same digest of its lines), and says which evidence it used; a
stale site is ignored with a note. Evidence files are written here by hand (no torch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from migrate.record.boot._migrate_recorder import line_digest

ROOT = Path(__file__).resolve().parents[1]

SOURCE = textwrap.dedent(
    """\
    import torch


    def run(model, x, path):
        scripted = torch.jit.script(model)
        scripted.save(path)
        return scripted(x)


    class Net(torch.nn.Module):
        def forward(self, x):
            return x


    def serve(batches, path):
        model = torch.jit.script(Net())
        torch.jit.save(model, path)
        outputs = []
        for batch in batches:
            x = batch.float()
            outputs.append(model(x))
        return outputs


    def trace_with(model, sample, path):
        traced = torch.jit.trace(model, sample())
        traced.save(path)
        return traced(sample())


    def load_from(path):
        return torch.jit.load(path)
    """
)
# Each capture is also saved, so the eager route (a capture that is only called becomes the
# eager object, issue 27) does not apply: only the export route fixes them, and it needs the
# facts a recorded run gives.
LINES = SOURCE.splitlines()


def _line(text: str) -> int:
    return next(i for i, line in enumerate(LINES, 1) if text in line)


def _tensor(*shape, dtype="float32"):
    return {"t": "tensor", "shape": list(shape), "dtype": dtype, "device": "cpu"}


def _site(text: str, api: str, **fields) -> dict:
    line = _line(text)
    call = LINES[line - 1]
    return {
        "path": "lib.py",
        "line": line,
        "end_line": line,
        "digest": line_digest(call),
        "api": api,
        "count": 1,
        "captured": [],
        "examples": [],
        "calls": [],
        "saved": [],
        "loaded": [],
        "saves_of": [],
        **fields,
    }


def _calls(args: list[dict], axes: list, count: int) -> list[dict]:
    return [{"args": args, "kwargs": {}, "count": count, "axes": axes}]


MODULE = [{"value": {"kind": "module", "class": "lib.Net"}, "count": 2}]
EVIDENCE = [
    _site("torch.jit.script(model)", "torch.jit.script", captured=MODULE),
    _site(
        "torch.jit.script(Net())",
        "torch.jit.script",
        captured=MODULE,
        calls=_calls([_tensor(2, 16, 3)], [[[2, 8, 32], [16], [3]]], 14),
    ),
    _site(
        "torch.jit.trace(model, sample())",
        "torch.jit.trace",
        captured=MODULE,
        examples=[{"value": {"inputs": _tensor(5, 16), "kwarg_inputs": None}, "count": 1}],
    ),
    _site("torch.jit.load(path)", "torch.jit.load", loaded=["models/m.pt"]),
    {**_site("torch.jit.load", "torch.jit.save", saved=["models/m.pt"]), "path": "tools/w.py"},
]


def _write(folder: Path, source: str = SOURCE, sites: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lib.py").write_text(source)
    if sites is not None:
        (folder / ".migrate").mkdir(exist_ok=True)
        data = {"version": 1, "tool": "torchscript-migrate", "runs": [], "sites": sites}
        (folder / ".migrate" / "evidence.json").write_text(json.dumps(data))
    return folder


def _migrate(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )


def _findings(folder: Path, *extra: str) -> dict[int, dict]:
    run = _migrate(folder, "scan", ".", "--format", "json", "--no-cache", "--isolated", *extra)
    assert run.returncode in (0, 1), run.stderr
    return {f["line"]: f for f in json.loads(run.stdout)["findings"]}


def _diff(folder: Path, *extra: str) -> str:
    run = _migrate(folder, "apply", ".", "--dry-run", "--unsafe-fixes", "--no-cache", *extra)
    assert run.returncode in (0, 1), run.stderr
    return run.stdout


def test_without_evidence_each_reason_holds(tmp_path):
    found = _findings(_write(tmp_path))
    assert "cannot tell a function" in found[_line("script(model)")]["message"]
    assert "do not exist yet" in found[_line("script(Net())")]["message"]
    assert "one input or a tuple" in found[_line("jit.trace")]["message"]
    assert "chosen at run time" in found[_line("jit.load")]["message"]
    assert all(f["fix"] == "assisted" for f in found.values())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = _write(tmp_path_factory.mktemp("ev"), sites=EVIDENCE)
    return _findings(folder), _diff(folder)


def test_evidence_decides_and_says_which(recorded):
    found, _ = recorded
    run = found[_line("script(model)")]
    assert run["fix"] == "auto"
    assert "evidence: seen 2 captures of a module (`lib.Net`)" in run["message"]
    serve = found[_line("script(Net())")]
    assert serve["fix"] == "auto"
    assert "seen 14 calls, batch 2..32" in serve["message"]
    trace = found[_line("jit.trace")]
    assert "evidence: the example was a tensor in 1 recorded trace" in trace["message"]


def test_generated_inputs_and_dynamic_shapes(recorded):
    _, diff = recorded
    # The varied axis gets its largest size, the others the recorded one; only axis 0 is
    # dynamic.
    assert "torch.randn(32, 16, 3, generator=torch.Generator().manual_seed(0))" in diff
    assert "dynamic_shapes=({0: torch.export.Dim.AUTO},)" in diff
    assert "+    traced = torch.export.export(model, (sample(),))" in diff
    assert "+    scripted = torch.export.export(model, (x,))" in diff
    # The saves move with their captures.
    for name in ("scripted", "model", "traced"):
        assert f"+    torch.export.save({name}, path)" in diff


def test_integer_inputs_and_explicit_file(tmp_path):
    sites = [
        _site(
            "torch.jit.script(Net())",
            "torch.jit.script",
            captured=MODULE,
            calls=_calls([_tensor(4, 7, dtype="int64")], [[[4], [7]]], 3),
        )
    ]
    folder = _write(tmp_path / "repo")
    elsewhere = _write(tmp_path / "other", sites=sites) / ".migrate" / "evidence.json"
    assert "torch.zeros" not in _diff(folder)
    diff = _diff(folder, "--evidence", str(elsewhere))
    assert "torch.zeros(4, 7, dtype=torch.int64)" in diff
    assert "dynamic_shapes" not in diff  # one size each


def test_stale_evidence_is_ignored_with_a_note(tmp_path):
    changed = SOURCE.replace("torch.jit.script(model)", "torch.jit.script(model)  # changed")
    found = _findings(_write(tmp_path, changed, sites=EVIDENCE))
    run = found[_line("script(model)")]
    assert run["fix"] == "assisted"
    assert "cannot tell a function" in run["message"]
    assert (
        "recorded evidence for line 5 is stale (the line changed since the recorded run)"
        in (run["message"])
    )
    assert found[_line("script(Net())")]["fix"] == "auto"  # its lines still match


def test_runtime_path_load_names_its_recorded_writer(recorded):
    found, diff = recorded
    load = found[_line("torch.jit.load(path)")]
    assert "chosen at run time" in load["message"]
    line = _line("torch.jit.load")
    note = (
        f"the recorded run loaded `models/m.pt`, written by the save at tools/w.py:{line}, "
        "which stays TorchScript in this run"
    )
    assert note in load["message"]
    # apply's later rounds keep the planner's reason (not "held back in the first round").
    left = diff.split("left for review", 1)[1]
    assert f"lib.py:{line}:12 MIG202 [assisted]" in left
    assert note in left
    assert "first round" not in diff


RUN_SAVE = _site("scripted.save(path)", "ScriptModule.save", saved=["models/run.pt"])
READS_RUN = _site("torch.jit.load(path)", "torch.jit.load", loaded=["models/run.pt"])


def test_runtime_path_load_moves_with_its_recorded_producer(tmp_path):
    """The run saw the load read what the save in `run` wrote; that save is migrated in
    this run, so the load reads the exported program."""
    folder = _write(tmp_path, sites=[*EVIDENCE[:3], RUN_SAVE, READS_RUN])
    load = _findings(folder)[_line("torch.jit.load")]
    assert load["fix"] == "auto", load["message"]
    assert (
        "evidence: the recorded run loaded `models/run.pt` (written by the save at lib.py:6)"
        in load["message"]
    )
    diff = _diff(folder)
    assert "+    return torch.export.load(path).module()" in diff
    assert "+    torch.export.save(scripted, path)" in diff


def test_runtime_path_load_waits_for_every_recorded_producer(tmp_path):
    """One of the two saves it read from stays TorchScript (tools/ is not scanned): the load
    is held naming it, and the save that would move is held for the load."""
    other = {**_site("torch.jit.load", "torch.jit.save", saved=["models/b.pt"]), "path": "t/w.py"}
    reads_both = {**READS_RUN, "loaded": ["models/run.pt", "models/b.pt"]}
    found = _findings(_write(tmp_path, sites=[*EVIDENCE[:3], RUN_SAVE, reads_both, other]))
    load, save = found[_line("torch.jit.load")], found[_line("scripted.save(path)")]
    assert load["fix"] == save["fix"] == "assisted"
    line = _line("torch.jit.load")
    assert (
        "the recorded run loaded `models/run.pt`, `models/b.pt`, written by the save at "
        f"t/w.py:{line}, which stays TorchScript" in load["message"]
    )
    assert (
        f"the file it wrote was read by the load at lib.py:{line}, which stays TorchScript"
        in save["message"]
    )


def test_missing_or_damaged_evidence_is_a_clear_error(tmp_path):
    folder = _write(tmp_path)
    run = _migrate(folder, "scan", ".", "--evidence", "nope.json")
    assert (run.returncode, run.stderr.strip()) == (2, "error: --evidence nope.json: no such file")
    (folder / "bad.json").write_text("[]")
    run = _migrate(folder, "scan", ".", "--evidence", "bad.json")
    assert run.returncode == 2
    assert "bad.json: not an evidence file (no `sites` list)" in run.stderr


@pytest.mark.parametrize(
    "kinds, expect",
    [(["function"], "+    compiled = fn"), (["function", "module"], "decide by hand")],
)
def test_function_evidence_uses_it_directly(tmp_path, kinds, expect):
    source = "import torch\n\n\ndef fast(fn, x):\n    compiled = torch.jit.script(fn)\n"
    source += "    return compiled(x)\n"
    site = {
        "path": "lib.py",
        "line": 5,
        "end_line": 5,
        "digest": line_digest("    compiled = torch.jit.script(fn)"),
        "api": "torch.jit.script",
        "count": 1,
        "captured": [{"value": {"kind": k, "name": "lib.f"}, "count": 1} for k in kinds],
        "examples": [],
        "calls": [],
        "saved": [],
        "loaded": [],
        "saves_of": [],
    }
    folder = _write(tmp_path, source, sites=[site])
    if len(kinds) == 1:
        assert expect in _diff(folder)
        assert "evidence: seen 1 capture of a function (`lib.f`)" in _findings(folder)[5]["message"]
    else:
        message = _findings(folder)[5]["message"]
        assert "cannot tell a function" in message
        assert "the recorded run scripted function, module here: decide by hand" in message


def test_module_evidence_on_a_capture_only_called_takes_the_eager_route(tmp_path):
    """Once the run says `model` was a module, a capture that is only called becomes the eager
    module (issue 27's safe route): no example inputs are needed, none are generated."""
    source = "import torch\n\n\ndef run(model, x):\n    scripted = torch.jit.script(model)\n"
    source += "    return scripted(x)\n"
    site = _site("torch.jit.script(model)", "torch.jit.script", captured=MODULE)
    site.update(line=5, end_line=5, digest=line_digest("    scripted = torch.jit.script(model)"))
    folder = _write(tmp_path / "recorded", source, sites=[site])
    found = _findings(folder)[5]
    assert (found["fix"], found["applicability"]) == ("auto", "safe")
    assert "it becomes the eager module" in found["message"]
    assert "evidence: seen 2 captures of a module (`lib.Net`)" in found["message"]
    diff = _diff(folder)
    assert "+    scripted = model\n" in diff
    assert "torch.export" not in diff
    assert "cannot tell a function" in _findings(_write(tmp_path / "bare", source))[5]["message"]


def test_evidence_is_read_again_once_the_file_changed(tmp_path):
    from migrate.record import evidence

    path = _write(tmp_path, sites=EVIDENCE[:1]) / ".migrate" / "evidence.json"
    try:
        evidence.activate(str(path))
        first = evidence.active()
        evidence.activate(str(path))
        assert evidence.active() is first
        data = json.loads(path.read_text())
        data["sites"] = EVIDENCE[:2]
        path.write_text(json.dumps(data))
        evidence.activate(str(path))
        assert len(evidence.active().by_key) == 2
    finally:
        evidence.activate(None)


def test_an_evidence_file_that_is_a_fifo_does_not_hang_the_scan(tmp_path):
    """A hostile tree may ship `.migrate/evidence.json` as a FIFO: one line, no hang."""
    import os
    import subprocess
    import sys

    (tmp_path / "m.py").write_text("import torch\nm = torch.jit.script(torch.nn.ReLU())\n")
    (tmp_path / ".migrate").mkdir()
    os.mkfifo(tmp_path / ".migrate" / "evidence.json")
    fifo = tmp_path / ".migrate" / "evidence.json"
    for extra, code in (([], 1), (["--evidence", str(fifo)], 2)):
        run = subprocess.run(
            [sys.executable, "-m", "migrate", "scan", str(tmp_path), *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == code, run.stdout + run.stderr
    assert run.stderr.strip() == f"error: --evidence {fifo}: not a regular file"


MOBILE = textwrap.dedent(
    """\
    import torch


    def save_mobile(program, path):
        program._save_for_lite_interpreter(path)


    def export_mobile(model, path):
        x = torch.randn(2, 16)
        traced = torch.jit.trace(model, x)
        save_mobile(traced, path)
        return traced(x)
    """
)


def _mobile_sites(*producers: str, source: str = MOBILE) -> list[dict]:
    lines = source.splitlines()
    save = next(i for i, t in enumerate(lines, 1) if "_save_for_lite" in t)
    trace = next(i for i, t in enumerate(lines, 1) if "jit.trace" in t)
    common = {"count": 1, "captured": [], "examples": [], "calls": [], "saved": [], "loaded": []}
    return [
        {"path": "lib.py", "line": save, "end_line": save, "api": "ScriptModule._save_for_lite_interpreter",
         "digest": line_digest(lines[save - 1]), **common, "saves_of": list(producers)},
        {"path": "lib.py", "line": trace, "end_line": trace, "api": "torch.jit.trace",
         "digest": line_digest(lines[trace - 1]), **common, "saves_of": [],
         "captured": MODULE},
    ]  # fmt: skip


def test_lite_save_of_a_parameter_lowers_the_recorded_program(tmp_path):
    """The run saw the save at line 5 save the trace's result only: both move (the trace
    stays a program where it is passed; the save lowers it)."""
    bare = _findings(_write(tmp_path / "bare", MOBILE))
    assert "cannot see that `program` is an exported program" in bare[5]["message"]
    folder = _write(tmp_path / "rec", MOBILE, sites=_mobile_sites("lib.py:10:torch.jit.trace"))
    found = _findings(folder)
    assert (found[5]["fix"], found[10]["fix"]) == ("auto", "auto"), found[5]["message"]
    assert (
        "the recorded run saved here the result of the capture at lib.py:10"
        in (found[5]["message"])
    )
    diff = _diff(folder)
    assert "to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])" in diff
    assert "+    save_mobile(traced, path)" not in diff  # the program itself is passed


def test_lite_save_waits_for_a_capture_that_stays(tmp_path):
    """It also saved what a script in tools/ (not migrated) made: the save is held naming
    it, and the trace passed to it is held for the save."""
    sites = _mobile_sites("lib.py:10:torch.jit.trace", "tools/t.py:3:torch.jit.script")
    found = _findings(_write(tmp_path, MOBILE, sites=sites))
    assert found[5]["fix"] == "assisted"
    assert (
        "the recorded run saved here the result of the capture at tools/t.py:3, which is "
        in (found[5]["message"])
    )
    assert found[10]["fix"] == "assisted"
    assert (
        "its result was saved by the lite save at lib.py:5, which stays" in (found[10]["message"])
    )


def test_lite_save_of_a_parameter_used_otherwise_stays(tmp_path):
    source = MOBILE.replace(
        "    program._save_for_lite_interpreter(path)\n",
        "    program._save_for_lite_interpreter(path)\n    return program(torch.ones(1, 16))\n",
    )
    sites = _mobile_sites("lib.py:11:torch.jit.trace", source=source)
    found = _findings(_write(tmp_path, source, sites=sites))
    assert found[5]["fix"] == "assisted"
    assert "`program` is also used on line 6, where a program may not do" in found[5]["message"]
    assert found[11]["fix"] == "assisted"  # passed to a function that calls it
