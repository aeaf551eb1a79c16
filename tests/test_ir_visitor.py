"""The shared IR visitor: the printer, the C writer (every dialect) and the numba renderer
handle every IR node class through it, and a node one of them does not handle is
``Unsupported`` naming the node, the backend and the renderer (not an ``AttributeError``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from gompute_core.codegen import CRenderer
from gompute_core.codegen.cexpr import FunctionWriter
from gompute_core.errors import Unsupported
from gompute_core.ir import nodes as ir
from gompute_core.ir.kernel import KernelIR
from gompute_core.ir.printer import IRPrinter, format_function, format_kernel
from gompute_core.ir.visitor import NODE_CLASSES, Visitor

pytest.importorskip("gompute_cuda")
pytest.importorskip("gompute_hip")
pytest.importorskip("gompute_cpu")

from gompute_cpu.kernels import render_module  # noqa: E402
from gompute_cpu.raw import RawRenderer  # noqa: E402
from gompute_cuda.renderer import CUDARenderer  # noqa: E402
from gompute_hip.renderer import HIPRenderer  # noqa: E402

F32 = np.float32


@dataclass(frozen=True)
class Mystery:
    """An expression node no renderer knows (as a node added to the IR would be)."""

    type: Any = F32


@dataclass(frozen=True)
class Pause:
    """A statement node no renderer knows."""


def test_node_classes_are_every_expression_and_statement() -> None:
    names = {c.__name__ for c in NODE_CLASSES}
    assert {"Const", "Var", "CallIntrinsic", "CallFunction", "Assign", "ForRange",
            "Break", "Return"} <= names
    assert len(NODE_CLASSES) == 19 + 12  # expressions + statements (raw kernels included)


@pytest.mark.parametrize("visitor", [IRPrinter, FunctionWriter, RawRenderer,
                                     CUDARenderer.writer_class, HIPRenderer.writer_class],
                         ids=lambda v: v.__name__)
def test_every_renderer_handles_every_node_class(visitor: type[Visitor]) -> None:
    # the CPU's loop fission consumes barriers (they end phases) before any statement is
    # rendered, so its renderer never meets one
    exempt = {ir.Barrier} if visitor is RawRenderer else set()
    assert visitor.handled() == frozenset(NODE_CLASSES) - exempt


def _kernel(body: tuple[Any, ...]) -> KernelIR:
    fn = ir.Function("f", (("x", F32),), F32, (), body)
    return KernelIR("mystery", "map", 256, (("T", F32),), None, (fn,), element="f")


BODIES = {
    "Mystery": (ir.Return(Mystery()),),  # type: ignore[arg-type]
    "Pause": (Pause(), ir.Return(ir.Var("x", F32))),
}


@pytest.mark.parametrize("node", sorted(BODIES))
def test_unhandled_node_is_unsupported_naming_it(node: str) -> None:
    kir = _kernel(BODIES[node])
    cases = [
        (lambda: format_function(kir.functions[0]), "ir", "IRPrinter"),
        (lambda: format_kernel(kir), "ir", "IRPrinter"),
        (lambda: CRenderer().render(kir), "c", "CRenderer"),
        (lambda: CUDARenderer().render(kir), "cuda", "CUDARenderer"),
        (lambda: HIPRenderer().render(kir), "hip", "HIPRenderer"),
        (lambda: render_module(kir), "cpu", "FunctionRenderer"),
    ]
    for render, backend, renderer in cases:
        with pytest.raises(Unsupported) as info:
            render()
        assert str(info.value) == f"{backend}: IR node {node} is not supported by {renderer}"


def test_a_misspelt_handler_fails_at_class_creation() -> None:
    with pytest.raises(TypeError, match="Binop is not an IR node class"):
        type("Bad", (Visitor,), {"visit_Binop": lambda self, e: ""})


def test_a_dialect_overrides_one_node_through_its_writer_class() -> None:
    """A dialect replaces a single node's rendering; the rest is the shared writer's."""

    class TernaryAsCall(FunctionWriter):
        def visit_Select(self, e: ir.Select) -> str:
            return (f"select({self.expr(e.cond)}, {self.expr(e.if_true)}, "
                    f"{self.expr(e.if_false)})")

    class Dialect(CRenderer):
        name: ClassVar[str] = "sel"
        writer_class: ClassVar[type[FunctionWriter]] = TernaryAsCall

    x = ir.Var("x", F32)
    body = (ir.Return(ir.Select(ir.Compare("gt", x, ir.Const(0.0, F32), np.bool_), x,
                                ir.Const(0.0, F32), F32)),)
    src = Dialect().render_functions(_kernel(body))
    assert "return select(((v_x) > ((0.0f))), v_x, (0.0f));" in src
    assert "? (v_x) : ((0.0f))" in CRenderer().render_functions(_kernel(body))
