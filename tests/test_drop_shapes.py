"""Shapes real repositories give `--intent drop` (seen on whole git repositories: open_clip's
`create_model(jit=True)`, e3nn's `compile()` helper and its tests' `torch.jit.Error`, torchani's
decorator factories and executor settings): what each becomes, in a real CLI run."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from tests.scan_support import run_cli, write_tree


def _diff(root: Path) -> str:
    run = run_cli(
        ["apply", ".", "--dry-run", "--no-cache", "--unsafe-fixes", "--intent", "drop"], cwd=root
    )
    assert run.code in (0, 1), run.stderr
    assert "error:" not in run.stderr, run.stderr
    return run.stdout


def _applied(tmp_path: Path, files: dict[str, str]) -> dict[str, str]:
    root = write_tree(tmp_path / "repo", {k: textwrap.dedent(v) for k, v in files.items()})
    run = run_cli(
        ["apply", ".", "--no-cache", "--unsafe-fixes", "--intent", "drop", "--allow-dirty"],
        cwd=root,
    )
    assert run.code in (0, 1), run.stderr
    out = {name: (root / name).read_text(encoding="utf-8") for name in files}
    for text in out.values():
        ast.parse(text)
    return out


def test_an_options_whole_block_that_only_scripted_becomes_its_warning(tmp_path):
    (factory,) = _applied(
        tmp_path,
        {
            "factory.py": """\
                import logging

                import torch


                def create_model(model, jit=False):
                    if jit:
                        logging.info("Attempting JIT scripting...")
                        try:
                            model = torch.jit.script(model)
                            logging.info("JIT scripting successful.")
                        except Exception as e:
                            logging.warning(f"JIT scripting failed: {e}")
                    return model
                """
        },
    ).values()
    assert "JIT scripting" not in factory and "torch.jit" not in factory
    assert "    if jit:\n        warnings.warn(\n" in factory
    assert '"jit=True is ignored: TorchScript is deprecated"' in factory
    assert "DeprecationWarning" in factory and "import warnings\n" in factory


def test_an_if_that_also_does_other_work_keeps_it(tmp_path):
    (factory,) = _applied(
        tmp_path,
        {
            "factory.py": """\
                import torch


                def create_model(model, jit=False):
                    if jit:
                        model = torch.jit.script(model)
                        model.eval()
                    return model
                """
        },
    ).values()
    assert "warnings" not in factory  # the block also does other work: only the script goes
    assert "    if jit:\n        model.eval()\n" in factory


def test_trace_module_with_options_takes_the_eager_route(tmp_path):
    (helper,) = _applied(
        tmp_path,
        {
            "helper.py": """\
                import torch


                def trace_all(mod, inputs, options):
                    mod = torch.jit.trace_module(mod, inputs, **options)
                    return mod
                """
        },
    ).values()
    assert "torch.jit" not in helper and "    return mod\n" in helper


def test_marker_calls_in_a_decorator_factory_become_their_argument(tmp_path):
    (markers,) = _applied(
        tmp_path,
        {
            "markers.py": """\
                import torch

                HAVE_EXT = False


                def unused_without_ext():
                    def decorator(func):
                        if HAVE_EXT:
                            return torch.jit.export(func)
                        return torch.jit.unused(func)

                    return decorator
                """
        },
    ).values()
    assert "torch.jit" not in markers
    assert markers.count("return func") >= 1


def test_two_executor_settings_under_one_if_leave_a_valid_block(tmp_path):
    (conftest,) = _applied(
        tmp_path,
        {
            "tests/conftest.py": """\
                import torch

                if hasattr(torch._C, "_jit_set_profiling_executor"):
                    # the legacy executor is too slow for tests
                    torch._C._jit_set_profiling_executor(True)
                    torch._C._jit_set_profiling_mode(False)

                VALUE = 1
                """
        },
    ).values()
    assert "_jit_set_profiling_executor(True)" not in conftest
    assert "_jit_set_profiling_mode(" not in conftest
    assert "VALUE = 1" in conftest  # parsed by _applied: the emptied `if` is valid


def test_public_executor_setters_go_and_a_setting_that_is_read_stays(tmp_path):
    (state,) = _applied(
        tmp_path,
        {
            "pkg/state.py": """\
                import torch

                STRATEGY = [("DYNAMIC", 3)]


                def set_global_state():
                    _ = torch.jit.set_fusion_strategy(STRATEGY)
                    torch.jit.enable_onednn_fusion(True)
                    previous = torch.jit.set_fusion_strategy(STRATEGY)
                    return previous
                """
        },
    ).values()
    assert "_ = torch.jit.set_fusion_strategy" not in state
    assert "enable_onednn_fusion" not in state
    assert "previous = torch.jit.set_fusion_strategy(STRATEGY)" in state  # its result is read


def test_torch_jit_error_beside_another_exception_goes_from_the_tuple(tmp_path):
    (test,) = _applied(
        tmp_path,
        {
            "tests/test_errors.py": """\
                import pytest
                import torch


                def test_rejects(m, x):
                    with pytest.raises((RuntimeError, torch.jit.Error)):
                        m(x)
                    try:
                        m(x)
                    except (torch.jit.Error, ValueError, KeyError):
                        pass
                """
        },
    ).values()
    assert "pytest.raises(RuntimeError)" in test
    assert "except (ValueError, KeyError):" in test and "torch.jit" not in test


def test_a_script_module_union_annotation_loses_the_script_module(tmp_path):
    (build,) = _applied(
        tmp_path,
        {
            "build.py": """\
                from typing import Optional, Union

                import torch
                from torch import nn


                def build(m: nn.Module) -> Union[torch.jit.ScriptModule, nn.Module]:
                    return m


                def pick(m) -> "Optional[int]":
                    x: torch.jit.ScriptModule | nn.Module | None = m
                    return x
                """
        },
    ).values()
    assert "-> nn.Module:" in build
    assert "x: nn.Module | None = m" in build
    assert "Union" not in build


def test_an_isinstance_check_of_script_module_holds_no_is_scripting_fold(tmp_path):
    root = write_tree(
        tmp_path / "repo",
        {
            "load.py": textwrap.dedent(
                """\
                import torch


                def state_of(checkpoint):
                    if isinstance(checkpoint, torch.jit.ScriptModule):
                        return checkpoint.state_dict()
                    return checkpoint
                """
            ),
            "layers.py": textwrap.dedent(
                """\
                import torch


                def blocks(all_blocks, stop_early, last):
                    if torch.jit.is_scripting() or not stop_early:
                        return all_blocks
                    return all_blocks[: last + 1]
                """
            ),
        },
    )
    diff = _diff(root)
    assert "-    if torch.jit.is_scripting() or not stop_early:\n" in diff
    assert "+    if not stop_early:\n" in diff


def test_a_choice_by_option_warns_and_a_loop_over_script_keys_warns(tmp_path):
    (model,) = _applied(
        tmp_path,
        {
            "model.py": """\
                import torch


                class Model(torch.nn.Module):
                    def __init__(self, jit_module_keys=()):
                        super().__init__()
                        self.parts = torch.nn.ModuleDict()
                        self.jit_module_keys = jit_module_keys

                    def ase(self, jit=False):
                        return torch.jit.script(self) if jit else self

                    def compile_parts(self):
                        for name in self.jit_module_keys:
                            self.parts[name] = torch.jit.script(self.parts[name])


                def main(args, model):
                    if args.jit:
                        torch._C._jit_set_profiling_executor(False)
                        model = torch.jit.script(model)
                    return model
                """
        },
    ).values()
    assert "torch.jit" not in model and "_jit_set" not in model
    assert "        if jit:\n            warnings.warn(" in model
    assert "        return self\n" in model
    assert "        if self.jit_module_keys:\n            warnings.warn(" in model
    assert '"self.jit_module_keys is ignored: TorchScript is deprecated"' in model
    assert "    if args.jit:\n        warnings.warn(" in model


def test_tests_that_only_check_torchscript_are_skipped_not_emptied(tmp_path):
    (test,) = _applied(
        tmp_path,
        {
            "tests/test_jit.py": """\
                import pytest
                import torch

                from pkg import helper, make


                def test_asserts_the_trace(x):
                    m = make()
                    assert torch.jit.trace(m, x.tolist())


                def test_expects_scripting_to_fail():
                    m = make()
                    with pytest.raises(RuntimeError):
                        torch.jit.script(m)


                def test_compares_through_a_loop(x):
                    m = make()
                    scripted = torch.jit.script(m)
                    for a, b in zip(m(x), scripted(x)):
                        torch.testing.assert_close(a, b)


                def test_scripts_a_function():
                    torch.jit.script(helper)


                def test_reads_the_graph():
                    assert "add" in str(torch.jit.script(helper).graph)
                """
        },
    ).values()
    # The loop compares the exported program (its call gives the example); each of the
    # others still holds its TorchScript, skipped with the reason: none checks nothing.
    assert test.count('@pytest.mark.skip(reason="TorchScript is dropped; check torch.export') == 4
    assert "scripted = torch.export.export(m, (x,))" in test
    assert "assert m\n" not in test and "scripted = m\n" not in test
    assert "    torch.jit.script(helper)\n" in test and ".graph)" in test


def test_annotate_keeps_the_type_on_the_name_and_drops_self_assignments(tmp_path):
    (ops,) = _applied(
        tmp_path,
        {
            "ops.py": """\
                from typing import Dict, List, Optional

                import torch
                from torch import Tensor


                def state(h: Tensor, finals: List[List[Tensor]], i: int):
                    cache = torch.jit.annotate(
                        Dict[str, Optional[Tensor]],
                        {
                            "h": h,
                        },
                    )
                    finals[i] = torch.jit.annotate(List[Tensor], finals[i])
                    return cache
                """
        },
    ).values()
    assert '    cache: Dict[str, Optional[Tensor]] = {\n        "h": h,\n    }\n' in ops
    assert "finals[i] =" not in ops and "torch.jit" not in ops


def test_traces_export_cannot_take_are_skipped_and_the_others_export(tmp_path):
    """A trace of a module's function, or of an example whose later calls change the number
    of dimensions or a size-1 axis, cannot become an export: the tests comparing them are
    skipped. An example whose later calls differ in other sizes exports with Dim.AUTO."""
    files = {
        "pkg/__init__.py": "",
        "pkg/utils.py": """\
            import torch


            def shape_of(x):
                return torch.tensor(x.shape)
            """,
        "tests/test_traces.py": """\
            import torch
            from torch.testing import assert_close

            from pkg import utils


            def test_function():
                traced = torch.jit.trace(utils.shape_of, torch.tensor([1]))
                x = torch.zeros(2, 3)
                assert torch.equal(traced(x), utils.shape_of(x))


            def test_rank():
                c = 4
                model = torch.nn.LayerNorm(c)
                traced = torch.jit.trace(model, torch.randn(1, c))
                y = torch.randn(3, 2, c)
                assert_close(traced(y), model(y))


            def test_size_one():
                c = 4
                model = torch.nn.LayerNorm(c)
                x = torch.randn(1, 5, c)
                traced = torch.jit.trace(model, x)
                y = torch.randn(3, 5, c)
                assert_close(traced(y), model(y))


            def test_other_sizes():
                c = 4
                model = torch.nn.LayerNorm(c)
                x = torch.randn(2, 5, c)
                traced = torch.jit.trace(model, x)
                y = torch.randn(3, 7, c)
                assert_close(traced(y), model(y))
            """,
    }
    test = _applied(tmp_path, files)["tests/test_traces.py"]
    tree = ast.parse(test)
    skipped = {
        f.name
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        and any("skip" in ast.unparse(d) for d in f.decorator_list)
    }
    assert skipped == {"test_function", "test_rank", "test_size_one"}
    (other,) = [f for f in tree.body if getattr(f, "name", "") == "test_other_sizes"]
    assert "torch.export.export(" in ast.unparse(other) and "Dim.AUTO" in ast.unparse(other)
    assert test.count("torch.export.export(") == 1


def test_an_asserted_trace_export_cannot_take_goes_and_the_tests_other_checks_stay(tmp_path):
    """`assert torch.jit.trace(m, x)` at the end of a test that checks other things: where
    export cannot take it, that line goes (the rest of the test still runs and checks); a
    test whose only check it is gets skipped."""
    files = {
        "tests/test_norm.py": """\
            import torch


            class Norm(torch.nn.Module):
                def forward(self, x):
                    if x.sum().item() > 0:
                        return x / x.sum()
                    return x


            def test_norm():
                norm = Norm()
                x = torch.rand(4, 3)
                assert torch.allclose(norm(x).sum(), torch.tensor(1.0))
                assert torch.jit.trace(norm, x)


            def test_only_traces():
                assert torch.jit.trace(Norm(), torch.rand(4, 3))
            """,
    }
    test = _applied(tmp_path, files)["tests/test_norm.py"]
    tree = ast.parse(test)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    kept = ast.unparse(functions["test_norm"])
    assert "torch.jit" not in kept and "torch.allclose(norm(x).sum()" in kept
    assert not functions["test_norm"].decorator_list
    assert functions["test_only_traces"].decorator_list  # skipped, saying why
    assert "TorchScript is dropped" in test


def test_a_capture_in_a_test_an_earlier_run_skipped_holds_nothing(tmp_path):
    """A second `apply --intent drop` (after `apply --test`, say) finds the capture still in
    the test the first run skipped: that test never runs, so the typing its class reads
    goes."""
    files = {
        "lib/__init__.py": "",
        "lib/model.py": """\
            from typing import List

            import torch


            class Model(torch.nn.Module):
                def forward(self, x):
                    out = torch.jit.annotate(List[torch.Tensor], [])
                    out.append(x)
                    return out[0]
            """,
        "tests/test_model.py": """\
            import unittest

            import torch

            from lib.model import Model


            @unittest.skip("TorchScript is dropped; check torch.export instead")
            def test_scripts():
                m = torch.jit.script(Model())
                assert m.code
            """,
    }
    model = _applied(tmp_path, files)["lib/model.py"]
    assert "torch.jit" not in model and "out: List[torch.Tensor] = []" in model
