"""``llvm.fma``: ``a * b + c`` rounded once, for ``g.math.fma``.

numba has no ``math.fma`` (Python 3.13's) and NumPy no fma ufunc, so the CPU renderer calls
these intrinsics (:meth:`gompute_cpu.render.FunctionRenderer.visit_CallIntrinsic`). LLVM
emits the CPU's fused multiply-add instruction where the target has one and a call of the C
library's exact ``fma``/``fmaf`` elsewhere, and folds constant operands exactly: the same
bits as the oracle and every other backend.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir as llvm_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _fma(t: types.Float, suffix: str) -> Any:
    """An intrinsic ``(t, t, t) -> t`` computing ``llvm.fma.<suffix>``."""

    @intrinsic
    def fma(typingctx: Any, a: Any, b: Any, c: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            lt = context.get_value_type(t)
            fn = cgutils.get_or_insert_function(
                builder.module, llvm_ir.FunctionType(lt, [lt, lt, lt]), f"llvm.fma.{suffix}")
            return builder.call(fn, args)

        return t(t, t, t), codegen

    return fma


fma_f64 = _fma(types.float64, "f64")
"""``a * b + c`` of three ``float64``, rounded once (kernel code only)."""

fma_f32 = _fma(types.float32, "f32")
"""``a * b + c`` of three ``float32``, rounded once (kernel code only)."""
