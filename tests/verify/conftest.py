"""Session-scoped models, archives and converted artifacts for the verify tests.

Everything is built here from ``fixtures/models/zoo.py``; nothing is downloaded.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from typer.testing import CliRunner  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fixtures.models import zoo  # noqa: E402
from tests.shared_dir import shared_folder  # noqa: E402

#: (model, kind) pairs TorchScript allows: tracing cannot take int/bool inputs,
#: and the scripted TransformerEncoder does not convert (covered separately).
ARCHIVES = [
    ("convnet", "trace"),
    ("convnet", "script"),
    ("lstm", "trace"),
    ("lstm", "script"),
    ("transformer", "trace"),
    ("transformer", "script"),
    ("dict_output", "trace"),
    ("dict_output", "script"),
    ("int_bool_args", "script"),
    ("scripted_helpers", "trace"),
    ("scripted_helpers", "script"),
    ("dropout_eval", "trace"),
]


def to_torchscript(module, example, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "script":
            return torch.jit.script(module)
        return torch.jit.trace(module, example, check_trace=False, strict=False)


@pytest.fixture(scope="session")
def zoo_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("zoo")


@pytest.fixture(scope="session")
def archives(zoo_dir):
    """``{(model, kind): (archive_path, inputs_path)}`` for every model in ARCHIVES."""
    out = {}
    for name, kind in ARCHIVES:
        module, example = getattr(zoo, name)()
        ts = to_torchscript(module, example, kind)
        path = zoo_dir / f"{name}_{kind}.pt"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.jit.save(ts, str(path))
        inputs = zoo_dir / f"{name}_inputs.pt"
        torch.save(example, inputs)
        out[(name, kind)] = (path, inputs)
    return out


@pytest.fixture(scope="session")
def cli_app():
    from migrate.cli.commands import app

    return app


@pytest.fixture(scope="session")
def invoke(cli_app):
    runner = CliRunner()

    def _invoke(*args: str):
        return runner.invoke(cli_app, [str(a) for a in args], catch_exceptions=True)

    return _invoke


@pytest.fixture(scope="session")
def verify_json(invoke):
    """Run ``migrate verify ... --format json``; return (exit code, report dict, result)."""

    def _run(*args: str):
        result = invoke("verify", *args, "--format", "json")
        report = None
        if result.stdout.strip().startswith("{"):
            report = json.loads(result.stdout)
        return result.exit_code, report, result

    return _run


@pytest.fixture(scope="session")
def convnet_converted(archives, invoke, tmp_path_factory):
    """``migrate convert`` of the traced conv net, shared by the candidate tests: converted
    once a session, by the first xdist worker that needs it (an export and a lowering)."""
    path, inputs = archives[("convnet", "trace")]
    with shared_folder(tmp_path_factory, "convnet_converted") as out:
        done = out / "result.json"
        if not done.exists():
            result = invoke("convert", path, "--inputs", inputs, "-o", out)
            assert result.exit_code == 0, result.output
            done.write_text(json.dumps({"stdout": result.stdout}))
        result = SimpleNamespace(**json.loads(done.read_text()))
    return out / "convnet_trace.pt2", out / "convnet_trace.pte", result


@pytest.fixture(scope="session")
def verified(archives, verify_json):
    """Default-candidate verify reports per archive, computed once per session."""
    cache = {}

    def _get(model: str, kind: str):
        if (model, kind) not in cache:
            path, inputs = archives[(model, kind)]
            cache[(model, kind)] = verify_json(
                path, "--inputs", inputs, "--samples", "2", "--device", "cpu"
            )
        return cache[(model, kind)]

    return _get
