"""``llvm.arithmetic.fence``: a float value LLVM's folds cannot see through.

A float select whose arms can differ only in the sign of zero was rewritten by LLVM:
``0.0f if 0.0 < b else f32(b)`` (``min(b, abs(False))`` with an f64 ``b`` returned as f32,
fuzz 1003/1159) became ``b >= 0 ? 0.0f : f32(b)``, +0.0 for ``b = -0.0`` where the oracle
returns -0.0. The CPU renderer passes a select's float constant arms through this fence
(:meth:`gompute_cpu.render.FunctionRenderer.visit_Select`): the select keeps its
comparison, and the fence of a constant is loop-invariant, so loops still vectorize.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir as llvm_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _fence(t: types.Float, suffix: str) -> Any:
    """An intrinsic ``t -> t`` returning its argument through ``llvm.arithmetic.fence``."""

    @intrinsic
    def fence(typingctx: Any, x: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            lt = context.get_value_type(t)
            fn = cgutils.get_or_insert_function(
                builder.module, llvm_ir.FunctionType(lt, [lt]), f"llvm.arithmetic.fence.{suffix}")
            return builder.call(fn, args)

        return t(t), codegen

    return fence


fence_f64 = _fence(types.float64, "f64")
"""A ``float64`` unchanged, opaque to LLVM's folds (kernel code only)."""

fence_f32 = _fence(types.float32, "f32")
"""A ``float32`` unchanged, opaque to LLVM's folds (kernel code only)."""
