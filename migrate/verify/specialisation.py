"""What a rung of the recovery ladder fixes to the example's values, and only when that
cannot be wrong for other inputs of those shapes: the shape-derived scalars an exported
program reads back (``aten._local_scalar_dense``), the sizes a trace read (``aten::size``
feeding ``prim::NumToTensor``), and what a specialised program then assumes of its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from migrate.verify.convert import Archive

#: Ops that read a tensor's values into a Python scalar.
_SCALAR_OPS = ("aten._local_scalar_dense.default", "aten.item.default")
#: Ops that read only a tensor's shape (never its values).
_SHAPE_OPS = (
    "aten.sym_size.int",
    "aten.sym_size.default",
    "aten.sym_numel.default",
    "aten.sym_stride.int",
    "aten.size.default",
    "aten.size.int",
    "aten.numel.default",
    "aten.dim.default",
)


class NotShapeDerived(Exception):
    """A scalar read back from tensor values: substituting it would be wrong for other inputs."""


@dataclass
class Specialisation:
    """The scalars fixed to their example values and the shapes that makes static."""

    values: list[tuple[str, Any]] = field(default_factory=list)  # (node, value)
    shapes: list[str] = field(default_factory=list)  # "ids.size(1) == 6"

    def describe(self) -> str:
        vals = ", ".join(f"{n}={v}" for n, v in self.values)
        shapes = "; assumes " + ", ".join(self.shapes) if self.shapes else ""
        return f"{len(self.values)} shape-derived scalar(s) fixed ({vals}){shapes}"


# --------------------------------------------------------------------------- scalars


def _target(node: Any) -> str:
    return str(node.target) if node.op == "call_function" else ""


def _shape_origin(node: Any, name: str | None) -> str:
    src = node.args[0]
    name = name or str(getattr(src, "target", "?"))
    if _target(node).startswith(("aten.sym_size", "aten.size")) and len(node.args) > 1:
        return f"{name}.size({node.args[1]})"
    return f"{_target(node).split('.')[1]}({name})"


def _unbacked(value: Any) -> bool:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    try:
        return bool(free_unbacked_symbols(value))
    except Exception:
        return True


def _check_derivation(scalar: Any, shapes: list[Any]) -> None:
    """Raise unless ``scalar``'s inputs derive only from shapes and constants."""
    seen: set[Any] = set()
    stack = list(scalar.all_input_nodes)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.op == "get_attr":  # parameters, buffers, lifted constants: fixed in the archive
            continue
        if node.op == "placeholder":
            raise NotShapeDerived(f"{scalar.name} reads the values of input {node.name}")
        if node.op != "call_function":
            raise NotShapeDerived(f"{scalar.name} depends on {node.op} {node.name}")
        if _target(node) in _SHAPE_OPS:
            src = node.args[0]
            if getattr(src, "op", None) == "placeholder":
                shapes.append(node)
                continue
            # The shape of an intermediate: fine unless it is data-dependent (nonzero, ...).
            val = node.meta.get("val")
            if val is None or _unbacked(val):
                raise NotShapeDerived(f"{scalar.name} reads a data-dependent size ({node.name})")
            continue
        if _target(node) in _SCALAR_OPS:
            raise NotShapeDerived(f"{scalar.name} reads another scalar ({node.name})")
        stack.extend(node.all_input_nodes)


def scalar_nodes(gm: Any) -> list[Any]:
    return [n for n in gm.graph.nodes if _target(n) in _SCALAR_OPS]


def _record(gm: Any, example: tuple[Any, ...], wanted: set[Any]) -> dict[Any, Any]:
    values: dict[Any, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            if n in wanted:
                values[n] = out
            return out

    with torch.no_grad():
        Recorder(gm).run(*pytree.tree_leaves(example))
    return values


def specialise_scalars(
    ep: Any,
    example: tuple[Any, ...],
    dynamic_shapes: Any = None,
    input_names: list[str] | None = None,
) -> tuple[Any, Specialisation] | None:
    """The program with its shape-derived scalars fixed at the example, re-exported.

    None when the program reads no scalar; :class:`NotShapeDerived` when one
    derives from tensor values (refused: it would be wrong for other inputs).
    """
    gm = ep.module()
    nodes = scalar_nodes(gm)
    if not nodes:
        return None
    shape_nodes: list[Any] = []
    for node in nodes:
        _check_derivation(node, shape_nodes)
    values = _record(gm, example, set(nodes))
    spec = Specialisation()
    for node in nodes:
        value = values[node]
        spec.values.append((node.name, value))
        for user in list(node.users):
            user.args = torch.fx.node.map_arg(
                user.args, lambda a, n=node, v=value: v if a is n else a
            )
            user.kwargs = torch.fx.node.map_arg(
                user.kwargs, lambda a, n=node, v=value: v if a is n else a
            )
        gm.graph.erase_node(node)
    seen = set()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    leaves = pytree.tree_leaves(example)
    for node in shape_nodes:
        src = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else None
        i = placeholders.index(src) if src in placeholders else -1
        leaf = leaves[i] if 0 <= i < len(leaves) else None
        size = leaf.shape[dim] if dim is not None and isinstance(leaf, torch.Tensor) else "?"
        names = input_names if input_names and len(input_names) == len(leaves) else []
        text = f"{_shape_origin(node, names[i] if 0 <= i < len(names) else None)} == {size}"
        if _declared_dynamic(dynamic_shapes, i, dim):
            raise NotShapeDerived(f"it would fix {text.split(' ==')[0]}, declared by --dynamic-dim")
        if text not in seen:
            seen.add(text)
            spec.shapes.append(text)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    new = torch.export.export(gm, tuple(example), dynamic_shapes=dynamic_shapes, strict=False)
    return new, spec


def _declared_dynamic(dynamic_shapes: Any, i: int, dim: Any) -> bool:
    spec = (
        dynamic_shapes[i]
        if isinstance(dynamic_shapes, tuple | list) and 0 <= i < len(dynamic_shapes)
        else None
    )
    return isinstance(spec, dict) and dim in spec


# --------------------------------------------------------------------------- trace sizes

#: TorchScript ops whose output sizes depend on tensor values: a size read after one of
#: them is not fixed by the input shapes.
_VALUE_SIZED = (
    "aten::nonzero",
    "aten::masked_select",
    "aten::unique",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::unique_dim",
    "aten::repeat_interleave",
    "aten::item",
    "aten::tolist",
)


def _size_reads(graph: Any) -> list[Any]:
    """The top-level ``aten::size(Tensor, int) -> int`` nodes, in graph order."""
    return [
        n
        for n in graph.nodes()
        if n.kind() == "aten::size" and n.output().type() == torch._C.IntType.get()
    ]


def _size_values(graph: Any, ts: Any, example: tuple[Any, ...]) -> list[int]:
    """What each size read of ``graph`` (``ts.forward``, inlined) gives on ``example``.

    A copy of the graph with ``self`` lowered to parameter inputs returns the list of its
    size reads instead of its outputs; running that copy costs one forward.
    """
    lowered, params = torch._C._jit_pass_lower_graph(graph, ts._c)
    reads = _size_reads(lowered)
    lowered.setInsertPoint(lowered.return_node())
    listed = lowered.insertNode(lowered.create("prim::ListConstruct", [n.output() for n in reads]))
    listed.output().setType(torch._C.ListType.ofInts())
    for i in reversed(range(len(list(lowered.outputs())))):
        lowered.eraseOutput(i)
    lowered.registerOutput(listed.output())
    fn = torch._C._create_function_from_graph("size_reads", lowered)
    with torch.no_grad():
        return list(fn(*pytree.tree_leaves(example), *params))


def specialise_sizes(ts: Any, example: tuple[Any, ...], dynamic_shapes: Any = None) -> str:
    """Replace the sizes a trace read (``aten::size`` feeding ``prim::NumToTensor`` chains)
    in ``ts.forward`` by their values at ``example``, in place, and fold the chains.

    ``ts`` must be a fresh load nothing else holds. :class:`NotShapeDerived` when a size
    could depend on values or on a dimension declared dynamic.
    """
    if any(isinstance(spec, dict) and spec for spec in dynamic_shapes or ()):
        raise NotShapeDerived("it would fix the dimensions --dynamic-dim declares")
    graph = ts.forward.graph
    torch._C._jit_pass_inline(graph)
    value_sized = [k for k in _VALUE_SIZED if graph.findAllNodes(k, True)]
    if value_sized:
        raise NotShapeDerived(f"the graph calls {value_sized[0]}, whose sizes depend on values")
    reads = _size_reads(graph)
    if not reads:
        raise NotShapeDerived("the graph reads no size")
    values = _size_values(graph, ts, example)
    if len(values) != len(reads):  # pragma: no cover - lower_graph keeps the node order
        raise NotShapeDerived("the size reads could not be matched with their values")
    for node, value in zip(reads, values, strict=True):
        graph.setInsertPoint(node)
        node.output().replaceAllUsesWith(graph.insertConstant(value))
        node.destroy()
    torch._C._jit_pass_constant_propagation(graph)
    torch._C._jit_pass_dce(graph)
    left = len(graph.findAllNodes("prim::NumToTensor", True))
    shapes = ", ".join(
        "x".join(map(str, t.shape)) for t in pytree.tree_leaves(example) if hasattr(t, "shape")
    )
    return (
        f"{len(reads)} size read(s) of the trace fixed at the example's input shapes "
        f"({shapes})" + (f"; {left} prim::NumToTensor left" if left else "")
    )


def convert_sizes_fixed(
    archive: Archive, example: tuple[Any, ...], dynamic_shapes: Any
) -> tuple[Any, str]:
    """A fresh load with its trace sizes fixed, through ``TS2EPConverter``."""
    from torch._export.converter import TS2EPConverter

    ts = archive.fresh()
    note = specialise_sizes(ts, example, dynamic_shapes)
    return TS2EPConverter(ts, tuple(example)).convert(), note


# --------------------------------------------------------------------------- assumptions


def input_assumptions(ts: Any, method: str, example: tuple[Any, ...], dynamic: set) -> list[str]:
    """What a specialised program fixes about its inputs, in the schema's names."""
    try:
        args = getattr(ts, method).schema.arguments[1:]
        names = [a.name for a in args]
        types = [str(a.type) for a in args]
    except Exception:
        names, types = [], []
    out = []
    for i, value in enumerate(example):
        name = names[i] if i < len(names) else f"input {i}"
        kind = types[i] if i < len(types) else ""
        if isinstance(value, torch.Tensor):
            dims = ["*" if (i, d) in dynamic else str(s) for d, s in enumerate(value.shape)] or [
                "scalar"
            ]
            text = f"{name} shape {'x'.join(dims)}"
            if kind.startswith("Optional") or kind.endswith("?"):
                text += " (None not accepted)"
            out.append(text)
        elif isinstance(value, list | tuple):
            out.append(f"{name} holds {len(value)} items")
        elif isinstance(value, bool | int | float):
            out.append(f"{name} == {value!r}")
    return out
