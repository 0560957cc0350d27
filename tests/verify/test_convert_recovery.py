"""Lowering recoveries and conversion stages, on real converted programs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from migrate.verify import VerifyError  # noqa: E402
from migrate.verify import convert as conv  # noqa: E402
from migrate.verify.load import load_archive  # noqa: E402

pytestmark = pytest.mark.verify


@pytest.fixture(scope="module")
def converted(archives):
    path, inputs = archives[("scripted_helpers", "trace")]
    example = torch.load(inputs)
    return conv.convert_archive(load_archive(path), example), example


def test_converted_path_is_named(converted):
    result, _ = converted
    assert result.path == ["TS2EPConverter"]


def test_lowering_recovers_by_reexporting(converted):
    """A program that fails to lower as converted is re-exported from ``ep.module()``."""
    result, example = converted
    seen = []

    def flaky_lower(program, backend):
        seen.append(program)
        if len(seen) == 1:  # e.g. a data-dependent guard left by the converter
            raise RuntimeError("Could not guard on data-dependent expression u0 < 4")
        return conv._lower_once(program, backend)

    lowered = conv.lower(result.ep, example, "xnnpack", lower_fn=flaky_lower)
    assert lowered.path == "re-export"
    assert lowered.attempts == [
        ("direct", "RuntimeError: Could not guard on data-dependent expression u0 < 4")
    ]
    assert len(lowered.buffer) > 0 and seen[1] is not result.ep
    # The original program is untouched by lowering and still runs.
    assert result.ep.module()(*example).shape == (4, 8)


def test_lowering_failure_names_stage_and_first_reason(converted):
    result, example = converted

    def broken(program, backend):
        raise RuntimeError("unsupported operator aten.foo\nlong details")

    with pytest.raises(VerifyError) as err:
        conv.lower(result.ep, example, "portable", lower_fn=broken)
    assert err.value.stage == "lower"
    assert err.value.message == (
        "to_edge_transform_and_lower (portable) failed: RuntimeError: unsupported operator "
        "aten.foo (also tried: re-export, decomposed)"
    )


def test_unknown_backend_is_usage_error(converted):
    result, example = converted
    with pytest.raises(VerifyError) as err:
        conv.lower(result.ep, example, "vulkan-ish")
    assert err.value.stage == "usage"
