"""Source of the small numba helpers that pin NumPy's scalar semantics.

numba computes narrow integers in ``int64`` and raises or traps where NumPy
wraps or returns 0, so the operations whose NumPy result is not just "the
C operation, cast back" go through one helper per (operation, type): integer
floor division and modulo (by zero -> 0, ``i_min // -1`` wraps), shifts with
out-of-range counts, integer powers, float powers (the C library's ``pow``, imported
from :mod:`.libm`), float floor division and modulo (a
port of NumPy's ``npy_divmod``, computed in the operand type) and Python's
``min``/``max`` (``b if b < a else a``: the first argument wins ties and NaN
comparisons, as the builtins do on NumPy scalars), and a fence for a select's float
constant arms (:mod:`.fence`) and ``fma`` (LLVM's, :mod:`.fma`). Signed 64-bit ``+ - *`` go
through ``uint64`` (:func:`wrapping`): numba marks them ``nsw``, so LLVM treats
their overflow as impossible and folds, e.g., ``7 // (c * a)`` to 0.
"""

from __future__ import annotations

import numpy as np

from gompute_core.types import ScalarType, bits, is_float, is_signed, short_name

TYPE_NAMES: dict[ScalarType, str] = {
    np.bool_: "np.bool_", np.int8: "np.int8", np.int16: "np.int16", np.int32: "np.int32",
    np.int64: "np.int64", np.uint8: "np.uint8", np.uint16: "np.uint16",
    np.uint32: "np.uint32", np.uint64: "np.uint64", np.float32: "np.float32",
    np.float64: "np.float64",
}


def helper_name(op: str, t: ScalarType) -> str:
    """The module-level name of helper ``op`` specialised for ``t``."""
    return f"_{op}_{short_name(t)}"


def wrapping(T: str, a: str, op: str, b: str) -> str:
    """``a op b`` for ``op`` in ``+ - *`` of rendered type ``T``, wrapping as NumPy does.

    numba computes narrow integers in ``int64`` (no overflow; the cast back wraps) but
    flags ``int64`` arithmetic ``nsw`` (signed overflow is undefined behaviour to LLVM),
    so ``int64`` is computed in ``uint64``, whose arithmetic wraps, and cast back."""
    if T == "np.int64":
        return f"{T}(np.uint64({a}) {op} np.uint64({b}))"
    return f"{T}({a} {op} {b})"


def _int_floordiv(T: str, signed: bool) -> str:
    neg = (f"    if b == {T}(-1):\n        return {wrapping(T, f'{T}(0)', '-', 'a')}\n"
           if signed else "")
    return (f"(a, b):\n    if b == {T}(0):\n        return {T}(0)\n{neg}"
            f"    return {T}(a // b)\n")


def _int_mod(T: str, signed: bool) -> str:
    cond = f"b == {T}(0) or b == {T}(-1)" if signed else f"b == {T}(0)"
    return f"(a, b):\n    if {cond}:\n        return {T}(0)\n    return {T}(a % b)\n"


def _shl(T: str, width: int, signed: bool) -> str:
    low = f"s < {T}(0) or " if signed else ""
    return (f"(a, s):\n    if {low}s >= {T}({width}):\n        return {T}(0)\n"
            f"    return {T}(a << s)\n")


def _shr(T: str, width: int, signed: bool) -> str:
    if signed:
        return (f"(a, s):\n    if s < {T}(0) or s >= {T}({width}):\n"
                f"        return {T}(-1) if a < {T}(0) else {T}(0)\n"
                f"    return {T}(a >> s)\n")
    return (f"(a, s):\n    if s >= {T}({width}):\n        return {T}(0)\n"
            f"    return {T}(a >> s)\n")


def _ipow(T: str, signed: bool) -> str:
    neg = (f"    if e < {T}(0):\n"
           f"        if a == {T}(1):\n            return {T}(1)\n"
           f"        if a == {T}(-1):\n"
           f"            return {T}(1) if (e & {T}(1)) == {T}(0) else {T}(-1)\n"
           f"        return {T}(0)\n") if signed else ""
    return (f"(a, e):\n{neg}    r = {T}(1)\n    base = a\n"
            f"    while e > {T}(0):\n"
            f"        if (e & {T}(1)) != {T}(0):\n            r = {wrapping(T, 'r', '*', 'base')}\n"
            f"        base = {wrapping(T, 'base', '*', 'base')}\n        e = {T}(e >> {T}(1))\n"
            f"    return r\n")


def _float_floordiv(T: str) -> str:
    return (f"(a, b):\n"
            f"    if b == {T}(0):\n        return {T}(a / b)\n"
            f"    mod = {T}(np.fmod(a, b))\n"
            f"    div = {T}({T}(a - mod) / b)\n"
            f"    if mod != {T}(0):\n"
            f"        if (b < {T}(0)) != (mod < {T}(0)):\n"
            f"            div = {T}(div - {T}(1))\n"
            f"    if div != {T}(0):\n"
            f"        fl = {T}(np.floor(div))\n"
            f"        if {T}(div - fl) > {T}(0.5):\n"
            f"            fl = {T}(fl + {T}(1))\n"
            f"        return fl\n"
            f"    return {T}(np.copysign({T}(0), {T}(a / b)))\n")


def _float_mod(T: str) -> str:
    return (f"(a, b):\n"
            f"    mod = {T}(np.fmod(a, b))\n"
            f"    if b == {T}(0):\n        return mod\n"
            f"    if mod != {T}(0):\n"
            f"        if (b < {T}(0)) != (mod < {T}(0)):\n"
            f"            mod = {T}(mod + b)\n"
            f"        return mod\n"
            f"    return {T}(np.copysign({T}(0), b))\n")


def helper_source(op: str, t: ScalarType) -> str:
    """The ``def`` of helper ``op`` for type ``t`` (decorated with the module's options)."""
    T = TYPE_NAMES[t]
    signed = is_signed(t)
    if op == "min":
        body = "(a, b):\n    return b if b < a else a\n"
    elif op == "max":
        body = "(a, b):\n    return b if b > a else a\n"
    elif is_float(t) and op == "pow":  # the C library's, as the oracle's (see .libm)
        return f"from gompute_cpu.libm import pow_{short_name(t)} as {helper_name(op, t)}\n"
    elif op == "fence":  # a float LLVM cannot fold through (see .fence)
        return f"from gompute_cpu.fence import fence_{short_name(t)} as {helper_name(op, t)}\n"
    elif op == "fma":  # one rounding (see .fma)
        return f"from gompute_cpu.fma import fma_{short_name(t)} as {helper_name(op, t)}\n"
    elif is_float(t):
        body = {"floordiv": _float_floordiv, "mod": _float_mod}[op](T)
    elif op == "floordiv":
        body = _int_floordiv(T, signed)
    elif op == "mod":
        body = _int_mod(T, signed)
    elif op == "lshift":
        body = _shl(T, bits(t), signed)
    elif op == "rshift":
        body = _shr(T, bits(t), signed)
    elif op == "pow":
        body = _ipow(T, signed)
    else:
        raise KeyError(op)
    return f"@njit(**_OPT)\ndef {helper_name(op, t)}{body}"
