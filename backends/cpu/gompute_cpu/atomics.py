"""Hardware atomics on 1-D NumPy arrays, callable from numba-compiled code.

numba has no atomic operations for the CPU target, yet raw kernels run their
blocks in parallel (``numba.prange``), so every update of a global array that
several blocks may touch must be one indivisible hardware operation. Each
function here is a numba ``intrinsic`` that emits one LLVM ``atomicrmw`` or
``cmpxchg`` (or a ``cmpxchg`` loop) on ``arr[i]``; it can only be called from
``@njit`` / ``@njit(parallel=True)`` code, including code generated as text.

Common rules, for all six functions:

- ``arr`` is a writable 1-D array of int32, uint32, int64, uint64, float32 or
  float64 (any layout; the strides are honoured). ``i`` is any integer type;
  there is no bounds check and no negative-index wraparound: ``i`` must lie
  in ``[0, arr.size)``.
- ``v`` and ``expected`` may be any integer, float or bool scalar; they are
  converted to the array's dtype first (numba's cast: C conversion, so a
  float passed to an integer array is truncated).
- Each returns the element's OLD value (before the operation), of the array's
  dtype.
- Every access is sequentially consistent (``seq_cst``); all updates of one
  element form a single total order, as if run one after another.

Semantics per function (``old`` is the element's value at the operation):

- ``atomic_add`` / ``atomic_sub``: ``old + v`` / ``old - v``; integers wrap
  modulo 2**bits, floats round as the scalar operation does (LLVM's ``atomicrmw
  fadd`` / ``fsub``, which LLVM >= 9 accepts and every llvmlite that
  numba >= 0.59 ships has; x86 has no float atomic add, so LLVM lowers it to
  a compare-exchange loop itself).
- ``atomic_min`` / ``atomic_max``: integers compare with the array's
  signedness (``min``/``max`` for signed, ``umin``/``umax`` for unsigned).
  Floats (a ``cmpxchg`` loop on the bit pattern): the element becomes ``v``
  only if ``v < old`` (min) / ``v > old`` (max); otherwise it is left exactly
  as it was. So a NaN ``v`` never replaces, a NaN element is never replaced,
  and ties keep the old value (``-0.0`` does not replace ``+0.0``, nor the
  reverse). This is Python's ``min(old, v)`` / ``max(old, v)`` (the first
  argument wins ties and NaN comparisons), not ``np.minimum``.
- ``atomic_exch``: stores ``v``.
- ``atomic_cas(arr, i, expected, v)``: stores ``v`` only if the element equals
  ``expected``. Floats compare their bit patterns, as CUDA's ``atomicCAS`` on
  the reinterpreted integer does: ``+0.0`` and ``-0.0`` differ, a NaN equals
  a NaN of the same bits. The old value is returned either way, so the
  swap happened exactly when the result is bitwise equal to ``expected``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import intrinsic

__all__ = ["atomic_add", "atomic_cas", "atomic_exch", "atomic_fence", "atomic_max", "atomic_min",
           "atomic_sub"]

#: The element types the atomics support.
ATOMIC_DTYPES: tuple[types.Number, ...] = (
    types.int32, types.uint32, types.int64, types.uint64, types.float32, types.float64)

#: Memory ordering of every atomic access.
_ORDERING = "seq_cst"

#: The ``atomicrmw`` operation of each read-modify-write function, per element kind:
#: (signed integer, unsigned integer, float); ``None`` means a compare-exchange loop.
_RMW_OPS: dict[str, tuple[str, str, str | None]] = {
    "add": ("add", "add", "fadd"),
    "sub": ("sub", "sub", "fsub"),
    "exch": ("xchg", "xchg", "xchg"),
    "min": ("min", "umin", None),
    "max": ("max", "umax", None),
}

#: The ordered float comparison ``v <op> old`` under which float min/max store ``v``.
_FLOAT_REPLACES: dict[str, str] = {"min": "<", "max": ">"}

_Codegen = Callable[[Any, ir.IRBuilder, Any, list[ir.Value]], ir.Value]


def _check_arguments(name: str, arr: types.Type, index: types.Type,
                     values: dict[str, types.Type]) -> types.Number:
    """The element type of ``arr``, after checking every argument of atomic ``name``."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype in ATOMIC_DTYPES):
        supported = ", ".join(str(t) for t in ATOMIC_DTYPES)
        raise TypingError(f"{name}: argument 'arr' must be a 1-D array of {supported}; "
                          f"got {arr}")
    if not arr.mutable:
        raise TypingError(f"{name}: argument 'arr' is a read-only array ({arr})")
    if not isinstance(index, types.Integer):
        raise TypingError(f"{name}: argument 'i' must be an integer; got {index}")
    for arg_name, value in values.items():
        if not isinstance(value, (types.Integer, types.Float, types.Boolean)):
            raise TypingError(f"{name}: argument '{arg_name}' must be an integer, float or "
                              f"bool scalar; got {value}")
    return arr.dtype


def _element_pointer(context: Any, builder: ir.IRBuilder, signature: Any,
                     args: list[ir.Value]) -> ir.Value:
    """Pointer to ``arr[i]`` (the first two arguments), without bounds check or wraparound."""
    arr_type, index_type = signature.args[:2]
    array = context.make_array(arr_type)(context, builder, args[0])
    index = context.cast(builder, args[1], index_type, types.intp)
    return cgutils.get_item_pointer(context, builder, arr_type, array, [index])


def _as_bits(builder: ir.IRBuilder, pointer: ir.Value,
             dtype: types.Number) -> tuple[ir.Value, ir.IntType]:
    """``pointer`` seen as a pointer to the integer of the element's width, and that type."""
    bits_type = ir.IntType(dtype.bitwidth)
    if isinstance(dtype, types.Float):
        pointer = builder.bitcast(pointer, bits_type.as_pointer())
    return pointer, bits_type


def _compare_exchange(builder: ir.IRBuilder, pointer: ir.Value, dtype: types.Number,
                      element: ir.Type, expected: ir.Value, new: ir.Value) -> ir.Value:
    """``cmpxchg`` on the element's bit pattern; returns the old value as the element type."""
    bits_pointer, bits_type = _as_bits(builder, pointer, dtype)
    if isinstance(dtype, types.Float):
        expected = builder.bitcast(expected, bits_type)
        new = builder.bitcast(new, bits_type)
    pair = builder.cmpxchg(bits_pointer, expected, new, _ORDERING, _ORDERING)
    old = builder.extract_value(pair, 0)
    return builder.bitcast(old, element) if isinstance(dtype, types.Float) else old


def _float_min_max(builder: ir.IRBuilder, pointer: ir.Value, dtype: types.Number,
                   element: ir.Type, value: ir.Value, comparison: str) -> ir.Value:
    """Store ``value`` while ``value <comparison> old`` holds (ordered); returns ``old``.

    A loop of ``cmpxchg`` on the bit pattern: read the element, stop if
    ``value`` does not beat it, else try to swap; a failed swap retries with
    the value it saw.
    """
    bits_pointer, bits_type = _as_bits(builder, pointer, dtype)
    value_bits = builder.bitcast(value, bits_type)
    first = builder.load_atomic(bits_pointer, _ORDERING, dtype.bitwidth // 8, typ=bits_type)
    entry = builder.block
    loop = builder.append_basic_block("atomic_minmax.loop")
    attempt = builder.append_basic_block("atomic_minmax.attempt")
    done = builder.append_basic_block("atomic_minmax.done")
    builder.branch(loop)

    builder.position_at_end(loop)
    current = builder.phi(bits_type)
    current.add_incoming(first, entry)
    current_value = builder.bitcast(current, element)
    builder.cbranch(builder.fcmp_ordered(comparison, value, current_value), attempt, done)

    builder.position_at_end(attempt)
    pair = builder.cmpxchg(bits_pointer, current, value_bits, _ORDERING, _ORDERING)
    current.add_incoming(builder.extract_value(pair, 0), attempt)
    builder.cbranch(builder.extract_value(pair, 1), done, loop)

    builder.position_at_end(done)
    return current_value


def _read_modify_write(name: str) -> Any:
    """The intrinsic ``atomic_<name>(arr, i, v)``, per ``_RMW_OPS[name]``."""
    signed_op, unsigned_op, float_op = _RMW_OPS[name]
    public_name = f"atomic_{name}"

    def typer(typingctx: Any, arr: types.Type, i: types.Type,
              v: types.Type) -> tuple[Any, _Codegen]:
        dtype = _check_arguments(public_name, arr, i, {"v": v})

        def codegen(context: Any, builder: ir.IRBuilder, signature: Any,
                    args: list[ir.Value]) -> ir.Value:
            pointer = _element_pointer(context, builder, signature, args)
            value = context.cast(builder, args[2], signature.args[2], dtype)
            element = context.get_value_type(dtype)
            if isinstance(dtype, types.Float):
                if float_op is None:
                    return _float_min_max(builder, pointer, dtype, element, value,
                                          _FLOAT_REPLACES[name])
                return builder.atomic_rmw(float_op, pointer, value, _ORDERING)
            op = signed_op if dtype.signed else unsigned_op
            return builder.atomic_rmw(op, pointer, value, _ORDERING)

        return dtype(arr, i, v), codegen

    typer.__name__ = typer.__qualname__ = public_name
    typer.__doc__ = (f"``{public_name}(arr, i, v)``: atomically apply {name} with ``v`` to "
                     "``arr[i]``; returns the old value (see the module docstring).")
    return intrinsic(typer)


atomic_add = _read_modify_write("add")
atomic_sub = _read_modify_write("sub")
atomic_min = _read_modify_write("min")
atomic_max = _read_modify_write("max")
atomic_exch = _read_modify_write("exch")


@intrinsic
def atomic_cas(typingctx: Any, arr: types.Type, i: types.Type, expected: types.Type,
               v: types.Type) -> tuple[Any, _Codegen]:
    """``atomic_cas(arr, i, expected, v)``: store ``v`` in ``arr[i]`` if it equals ``expected``.

    Floats compare bit patterns. Returns the old value whether or not it stored.
    """
    dtype = _check_arguments("atomic_cas", arr, i, {"expected": expected, "v": v})

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any,
                args: list[ir.Value]) -> ir.Value:
        pointer = _element_pointer(context, builder, signature, args)
        expected_value = context.cast(builder, args[2], signature.args[2], dtype)
        new_value = context.cast(builder, args[3], signature.args[3], dtype)
        element = context.get_value_type(dtype)
        return _compare_exchange(builder, pointer, dtype, element, expected_value, new_value)

    return dtype(arr, i, expected, v), codegen


@intrinsic
def atomic_fence(typingctx: Any) -> tuple[Any, _Codegen]:
    """``atomic_fence()``: a sequentially consistent memory fence (``threadfence()``); the
    accesses before it are ordered before those after it, for every thread."""

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any,
                args: list[ir.Value]) -> ir.Value:
        builder.fence(_ORDERING)
        return context.get_dummy_value()

    return types.none(), codegen
