"""`migrate verify` / `migrate convert` end to end on real models built in the tests."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from tests.verify.conftest import REPO, zoo  # noqa: E402

pytestmark = pytest.mark.verify

CONVERTIBLE = [
    ("convnet", "trace"),
    ("convnet", "script"),
    ("lstm", "trace"),
    ("lstm", "script"),
    ("transformer", "trace"),
    ("dict_output", "trace"),
    ("dict_output", "script"),
    ("int_bool_args", "script"),
    ("scripted_helpers", "trace"),
    ("scripted_helpers", "script"),
]


def cells(report, **match):
    return [c for c in report["results"] if all(c[k] == v for k, v in match.items())]


# --------------------------------------------------------------------------- passing models


#: Verified by the default suite: a traced conv net, and the scripted dict output whose report
#: test_dict_output_leaves_are_named reads anyway. The others cost 10-40 s of CPU each (the
#: LSTM and the transformer most) and are marked slow.
DEFAULT_ARCHIVES = {("convnet", "trace"), ("dict_output", "script")}


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        pytest.param(
            m, k, id=f"{m}-{k}", marks=() if (m, k) in DEFAULT_ARCHIVES else pytest.mark.slow
        )
        for m, k in CONVERTIBLE
    ],
)
def test_archive_converts_and_matches(verified, model, kind):
    code, report, result = verified(model, kind)  # shared with the tests that read one report
    assert code == 0, result.output
    assert report["verdict"] == "pass"
    assert [c["candidate"] for c in report["results"]] == ["exported", "pt2", "pte"]
    assert all(c["status"] == "pass" and c["samples"] == 3 for c in report["results"])
    exported, pt2, pte = report["results"]
    # Same CPU kernels: the exported program is (near) bit-exact, the delegate a few ulps off.
    assert exported["max_abs"] <= 1e-6 and pt2["max_abs"] <= 1e-6
    assert pte["max_abs"] < 1e-4
    assert report["candidates"][2]["backend"] == "xnnpack"
    assert "path: direct" in report["candidates"][2]["source"]


def test_dict_output_leaves_are_named(verified):
    code, report, _ = verified("dict_output", "script")
    assert code == 0
    pte = cells(report, candidate="pte")[0]
    assert [leaf["leaf"] for leaf in pte["leaves"]] == ["output['logits']", "output['aux']"]
    assert pte["leaves"][0]["shape"] == [3, 4]


@pytest.mark.slow  # the scripted transformer's whole recovery ladder: ~16 s CPU
def test_scripted_transformer_recovers_by_recapture(verified):
    """The converter fails on its prim::If; freeze + re-capture converts it (issue 13)."""
    code, report, result = verified("transformer", "script")
    assert code == 0, result.output
    (rec,) = report["recovery"]
    assert rec["path"] == "freeze + re-capture"
    assert "prim::If" in rec["attempts"][0]["reason"]
    assert any("prim::If reduced" in s for s in rec["specialised"])
    assert all(c["status"] == "pass" for c in report["results"])


# --------------------------------------------------------------------------- convert + candidates


def test_convert_writes_pt2_and_pte(convnet_converted, archives):
    pt2, pte, result = convnet_converted
    assert pt2.is_file() and pte.is_file()
    assert "lowering path: direct" in result.stdout and "backend: xnnpack" in result.stdout
    _, inputs = archives[("convnet", "trace")]
    example = torch.load(inputs)
    module, _ = zoo.convnet()
    expected = module(*example)
    ep = torch.export.load(str(pt2))
    torch.testing.assert_close(ep.module()(*example), expected)
    from executorch.runtime import Runtime

    out = Runtime.get().load_program(str(pte)).load_method("forward").execute(list(example))
    torch.testing.assert_close(out[0], expected, rtol=1e-4, atol=1e-5)


def test_convert_portable_backend(archives, invoke, tmp_path):
    path, inputs = archives[("scripted_helpers", "script")]
    result = invoke("convert", path, "--inputs", inputs, "-o", tmp_path, "--backend", "portable")
    assert result.exit_code == 0, result.output
    assert "backend: portable" in result.stdout
    assert (tmp_path / "scripted_helpers_script.pte").stat().st_size > 0


def test_everyday_flow_old_pt_against_new_artifacts(convnet_converted, archives, verify_json):
    pt2, pte, _ = convnet_converted
    path, inputs = archives[("convnet", "trace")]
    code, report, result = verify_json(
        path, "--inputs", inputs, "--candidate", pt2, "--candidate", pte, "--samples", "2"
    )
    assert code == 0, result.output
    assert [(c["candidate"], c["status"]) for c in report["results"]] == [
        ("convnet_trace.pt2", "pass"),
        ("convnet_trace.pte", "pass"),
    ]
    assert report["artifacts"] == {}  # nothing converted without --out


def test_callable_target_trace_and_script(verify_json, tmp_path):
    code, report, result = verify_json(
        "fixtures.models.zoo:scripted_helpers", "--original", "script", "--samples", "1",
        "--out", tmp_path,
    )  # fmt: skip
    assert code == 0, result.output
    assert report["target_kind"] == "callable"
    assert report["reference"].startswith("torch.jit.script")
    assert {c["status"] for c in report["results"]} == {"pass"}
    for key in ("pt2", "pte", "reference", "inputs", "report"):
        assert (tmp_path / report["artifacts"][key].split("/")[-1]).is_file(), key
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["verdict"] == "pass" and saved["schema_version"] == 1


def test_callable_candidate_of_migrated_code_passes(archives, verify_json):
    path, inputs = archives[("lstm", "trace")]
    code, report, _ = verify_json(
        path, "--inputs", inputs, "--candidate", "fixtures.models.zoo:lstm"
    )
    assert code == 0
    (cell,) = report["results"]
    assert cell["kind"] == "callable" and cell["status"] == "pass" and cell["max_abs"] == 0


# --------------------------------------------------------------------------- the checker can fail


def test_perturbed_weights_are_a_mismatch(archives, verify_json):
    path, inputs = archives[("convnet", "trace")]
    code, report, result = verify_json(
        path, "--inputs", inputs, "--candidate", "fixtures.models.zoo:convnet_perturbed"
    )
    assert code == 1, result.output
    (cell,) = report["results"]
    assert cell["status"] == "fail"
    assert cell["max_abs"] > 1e-3
    assert cell["worst"]["leaf"] == "output" and len(cell["worst"]["index"]) == 2
    div = cell["first_divergence"]
    assert div["differing_parameters"] == ["fc.weight"]
    assert div["module"] == "fc" and div["operator"].startswith("aten.")


def test_perturbed_pt2_candidate_names_first_divergent_operator(archives, verify_json, tmp_path):
    module, example = zoo.convnet_perturbed()
    pt2 = tmp_path / "perturbed.pt2"
    torch.export.save(torch.export.export(module, example), str(pt2))
    path, inputs = archives[("convnet", "trace")]
    code, report, result = verify_json(path, "--inputs", inputs, "--candidate", pt2)
    assert code == 1
    (cell,) = report["results"]
    assert cell["first_divergence"]["module"] == "fc"
    text = invoke_text(result)
    assert "mismatch" not in text  # json mode prints JSON only


def invoke_text(result):
    return result.stdout if not result.stdout.lstrip().startswith("{") else ""


def test_training_mode_dropout_is_a_mismatch(archives, invoke):
    path, inputs = archives[("dropout_eval", "trace")]
    result = invoke(
        "verify", path, "--inputs", inputs, "--candidate", "fixtures.models.zoo:dropout_train"
    )
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "FAIL" in out and "MISMATCH" in out
    assert "mismatch: fixtures.models.zoo:dropout_train on cpu: output at index (" in out
    assert "training mode: drop" in out
    assert "first divergence: aten." in out


def test_training_mode_target_reference_is_flagged(verify_json):
    code, report, _ = verify_json("fixtures.models.zoo:dropout_train", "--samples", "1")
    assert code == 1
    assert any("not deterministic" in n for n in report["notes"])
    assert any(c["status"] == "fail" for c in report["results"])


# --------------------------------------------------------------------------- dynamic dims (--bench: test_bench.py)


@pytest.mark.slow  # an export with dynamic dimensions and its lowering: ~9 s CPU
def test_dynamic_dims_sizes_are_sampled_and_pass(archives, verify_json):
    path, inputs = archives[("convnet", "trace")]
    code, report, result = verify_json(
        path, "--inputs", inputs, "--dynamic-dim", "0:1:8", "--samples", "1"
    )
    assert code == 0, result.output
    assert [s["name"] for s in report["samples"]] == ["example", "random[0]", "in0_d0=1",
                                                      "in0_d0=4", "in0_d0=8"]  # fmt: skip
    assert all(c["samples"] == 5 and c["status"] == "pass" for c in report["results"])
    assert "re-export with torch.export.Dim" in report["candidates"][0]["source"]


# --------------------------------------------------------------------------- bad input, exit 2


def one_error_line(result, stage):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {stage}: "), lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def test_missing_file(invoke, tmp_path):
    line = one_error_line(invoke("verify", tmp_path / "nope.pt", "--input-shape", "2x3"), "load")
    assert "no such file" in line
    one_error_line(invoke("convert", tmp_path / "nope.pt", "--input-shape", "2x3"), "load")


def test_not_a_torchscript_archive(invoke, tmp_path):
    ckpt = tmp_path / "weights.pt"
    torch.save(zoo.convnet()[0].state_dict(), ckpt)
    line = one_error_line(invoke("verify", ckpt, "--input-shape", "2x3x16x16"), "load")
    assert "not a TorchScript archive" in line and "torch.save checkpoint" in line
    junk = tmp_path / "junk.pt"
    junk.write_text("hello")
    assert "not a zip" in one_error_line(invoke("convert", junk, "--input-shape", "2"), "load")


def test_inputs_that_do_not_fit_the_signature(archives, invoke, tmp_path):
    path, _ = archives[("int_bool_args", "script")]
    line = one_error_line(invoke("verify", path, "--input-shape", "2x7:int64:0..19"), "inputs")
    assert "takes 3 inputs" in line and "forward(ids: Tensor, scale: int, flip: bool)" in line
    wrong = tmp_path / "wrong.pt"
    torch.save((torch.randint(0, 20, (2, 7)), 3, 1), wrong)
    line = one_error_line(invoke("verify", path, "--inputs", wrong), "inputs")
    assert "input 2 (flip) must be bool" in line
    conv, _ = archives[("convnet", "trace")]
    line = one_error_line(invoke("convert", conv, "--input-shape", "2x5x16x16"), "inputs")
    assert "rejected the inputs" in line


def test_malformed_shape_spec_and_options(archives, invoke):
    path, inputs = archives[("convnet", "trace")]
    line = one_error_line(invoke("verify", path, "--input-shape", "2x3xx16"), "usage")
    assert "malformed input spec '2x3xx16'" in line
    one_error_line(invoke("verify", path, "--inputs", inputs, "--dynamic-dim", "0-1-8"), "usage")
    one_error_line(invoke("verify", path, "--inputs", inputs, "--format", "yaml"), "usage")
    one_error_line(invoke("verify", path), "usage")
    one_error_line(invoke("verify", path, "--inputs", inputs, "--candidate", "new.onnx"), "usage")
    if not torch.accelerator.is_available():
        line = one_error_line(
            invoke("verify", path, "--inputs", inputs, "--device", "cuda"), "usage"
        )
        assert "not available" in line


def test_debug_shows_the_exception(invoke, tmp_path):
    from migrate.verify import VerifyError

    result = invoke("verify", tmp_path / "nope.pt", "--input-shape", "2", "--debug")
    assert isinstance(result.exception, VerifyError) and result.exception.stage == "load"


def test_missing_extra_says_how_to_install(invoke, monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "executorch" else real(name, *a),
    )
    result = invoke("verify", tmp_path / "x.pt")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "migrate verify needs torch and executorch: pip install -e '.[verify]' in a checkout "
        "of torchscript-migrate (docs/install.md)"
    )


# --------------------------------------------------------------------------- real subprocesses


def test_cli_import_does_not_import_torch():
    code = "import sys, migrate.cli.commands, migrate.cli.verify_commands; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_subprocess_verify_and_bad_input(archives, tmp_path):
    path, inputs = archives[("scripted_helpers", "script")]
    ok = subprocess.run(
        [sys.executable, "-m", "migrate", "verify", str(path), "--inputs", str(inputs),
         "--samples", "1", "--format", "json", "--no-default-candidates",
         "--candidate", "fixtures.models.zoo:scripted_helpers"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["verdict"] == "pass"
    bad = subprocess.run(
        [sys.executable, "-m", "migrate", "verify", str(tmp_path / "missing.pt"),
         "--input-shape", "4x8"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"error: load: no such file: {tmp_path / 'missing.pt'} (give a TorchScript archive "
        "(.pt), a folder of archives, --manifest FILE or package.module:callable)"
    )
