"""The C library's ``pow``/``powf``, called so that LLVM cannot rewrite them.

The oracle's float ``**`` (a NumPy scalar's, and a Python float's) calls the C
library's ``pow`` (``powf`` for ``float32``). numba's ``np.power`` becomes LLVM's
``llvm.pow`` intrinsic, which LLVM rewrites for constant exponents (``x ** 2.0`` to
``x * x``, ``x ** 0.5`` to ``sqrt(x)``): correctly rounded, where glibc's ``pow``
rounds within 0.52 ulp, so the kernel was one ulp off the oracle on ties and
near-ties. The functions called here are declared ``nobuiltin``: LLVM leaves them alone and the
process's C library computes them, as it does for the oracle.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir as llvm_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _libm_call(symbol: str, t: types.Float) -> Any:
    """An intrinsic ``(t, t) -> t`` calling the C function ``symbol`` as a plain call."""

    @intrinsic
    def call(typingctx: Any, a: Any, b: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            lt = context.get_value_type(t)
            fn = cgutils.get_or_insert_function(
                builder.module, llvm_ir.FunctionType(lt, [lt, lt]), symbol)
            fn.attributes.add("nobuiltin")
            return builder.call(fn, args)

        return t(t, t), codegen

    return call


pow_f64 = _libm_call("pow", types.float64)
"""``pow(a, b)`` of two ``float64`` (kernel code only)."""

pow_f32 = _libm_call("powf", types.float32)
"""``powf(a, b)`` of two ``float32`` (kernel code only)."""
