"""Register tiles in the leaves of a moved phase (:mod:`.interchange`).

Moved out of the thread loop, every statement of a small constant loop over a local array
is its own vector loop over the block: the SGEMM port's ``rC[n, m] = fma(rA[m], rB[n],
rC[n, m])`` loaded ``rA``, ``rB`` and ``rC`` and stored ``rC`` once per multiply-add. A
constant-trip loop that updates a register tile (it loads an element of a local array it
stores) of at most :data:`REGISTERS` elements, :data:`SMALL` statements unrolled, reading
no memory but shared arrays (:func:`small`), instead stays inside its leaf, unrolled here
(:func:`unroll`): every index of a local array becomes a constant, and the renderer keeps
each element a leaf touches that way in a scalar (:func:`tiles`), loaded from the thread's
slot when the thread's run of the leaf starts and stored back when it ends, so LLVM keeps
the tile in vector registers (one lane per thread) across the whole leaf: the port's
``for k`` step (4 x: 4 ``rA`` and 4 ``rB`` loads from shared memory, 16 multiply-adds)
runs with its 16 accumulators in registers. SGEMM 512^3, 1 numba thread, same process:
port 19.3 -> 7.0 ms (the numba fma loop 4.7 ms); the tuned kernel's 8 x 8 tile (80
elements) stays moved out, unchanged.

Which loops stay is a rendering choice only: any loop may run inside the thread loop (that
is the kernel's own order), so :func:`small` decides nothing about correctness.
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from gompute_core.ir import nodes as ir
from gompute_core.ir.walk import assigned_in, holds, nodes_in

SMALL = 128
"""The most statements a kept loop runs per thread, counted unrolled: the port's ``for k``
step is 4 x (4 + 4 + 16)."""

REGISTERS = 32
"""The most local-array elements a kept loop may touch: each becomes a vector register
(one lane per thread; x86-64 with AVX-512 has 32). The port's step (16 accumulators, 4 + 4
operands) fits; the tuned kernel's 8 x 8 multiply-add (80) does not: kept, it ran 17x
slower than moved out (spills)."""

TILE = 64
"""The most local-array elements a leaf keeps in scalars (its kept loops' and the rest)."""


def trips(s: ir.ForRange) -> int | None:
    """The iteration count of ``s`` when its bounds are integer constants, else None."""
    bounds = (s.start, s.stop, s.step)
    if not all(isinstance(e, ir.Const) and type(e.value) is int for e in bounds):
        return None
    start, stop, step = (e.value for e in bounds)  # type: ignore[union-attr]
    return len(range(start, stop, step)) if step else None  # type: ignore[arg-type]


def _size(stmts: tuple[ir.Stmt, ...]) -> int | None:
    """How many statements ``stmts`` run unrolled, or None when one of them is anything but
    a local store, an assignment or a constant-trip loop of such."""
    total = 0
    for s in stmts:
        if isinstance(s, ir.ForRange):
            n, body = trips(s), _size(s.body)
            if n is None or body is None or s.var in assigned_in(s.body):
                return None
            total += n * body
        elif isinstance(s, (ir.LocalStore, ir.Assign)):
            total += 1
        else:
            return None
    return total


def small(s: ir.ForRange) -> bool:
    """True when ``s`` stays inside its leaf and is unrolled there: it updates a register
    tile (loads an element of a local array it stores: an accumulator) of at most
    :data:`REGISTERS` elements in all, with constant indices once unrolled; constant trip count,
    at most :data:`SMALL` statements unrolled, only local stores and assignments, loads of
    shared memory only (a global load's index computations and gathers, in the same loop
    over the threads, kept LLVM from vectorizing the SGEMM port's step), no call, no
    atomic."""
    size = _size((s,))
    if size is None or not 0 < size <= SMALL or holds(s.body, ir.Atomic, ir.CallFunction) \
            or not all(isinstance(node.base.type, ir.SharedType)
                       for node in nodes_in(s.body) if isinstance(node, ir.Load)):
        return False
    loaded: set[tuple[str, tuple[object, ...]]] = set()
    stored: set[tuple[str, tuple[object, ...]]] = set()
    for node in nodes_in(_expand((s,))):
        if isinstance(node, (ir.LocalLoad, ir.LocalStore)):
            if not all(isinstance(i, ir.Const) for i in node.index):
                return False
            key = (node.base.name, tuple(i.value for i in node.index))  # type: ignore[union-attr]
            (stored if isinstance(node, ir.LocalStore) else loaded).add(key)
    return bool(loaded & stored) and len(loaded | stored) <= REGISTERS


def _expand(stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """``stmts`` with every loop unrolled (their loops are constant-trip: :func:`_size`),
    each leaving its variable at its last value as the loop would."""
    out: list[ir.Stmt] = []
    for s in stmts:
        if not isinstance(s, ir.ForRange):
            out.append(s)
            continue
        values = range(s.start.value, s.stop.value, s.step.value)  # type: ignore[union-attr]
        for v in values:
            out.extend(_expand(_subst(s.body, {s.var: v})))  # type: ignore[arg-type]
        if values:
            out.append(ir.Assign(s.var, ir.Const(values[-1], s.start.type)))  # type: ignore[union-attr]
    return tuple(out)


def _fold(e: object) -> object:
    """``e`` with an integer operation on constants (``+ - *``, a cast between integer
    types) folded to a constant when the result fits its type."""
    value: int | None = None
    if isinstance(e, ir.Binary) and isinstance(e.lhs, ir.Const) and isinstance(e.rhs, ir.Const) \
            and type(e.lhs.value) is int and type(e.rhs.value) is int:
        a, b = e.lhs.value, e.rhs.value
        value = {"add": a + b, "sub": a - b, "mul": a * b}.get(e.op)
    elif isinstance(e, ir.Cast) and isinstance(e.value, ir.Const) and type(e.value.value) is int:
        value = e.value.value
    if value is None or e.type is bool or not np.issubdtype(e.type, np.integer):  # type: ignore[attr-defined]
        return e
    info = np.iinfo(e.type)  # type: ignore[attr-defined]
    return ir.Const(value, e.type) if info.min <= value <= info.max else e  # type: ignore[attr-defined]


def _subst(obj: object, env: dict[str, int]) -> object:
    """``obj`` with the variables of ``env`` as constants (folded where they meet)."""
    if isinstance(obj, tuple):
        return tuple(_subst(item, env) for item in obj)
    if isinstance(obj, ir.Var):
        return ir.Const(env[obj.name], obj.type) if obj.name in env else obj  # type: ignore[arg-type]
    if not hasattr(obj, "__dataclass_fields__") or isinstance(
            obj, (ir.PointerType, ir.SharedType, ir.StructType, ir.ArrayType, ir.LocalType)):
        return obj
    if isinstance(obj, ir.ForRange) and obj.var in env:  # an inner loop on the same name
        env = {k: v for k, v in env.items() if k != obj.var}
    changes = {f.name: _subst(getattr(obj, f.name), env) for f in fields(obj)  # type: ignore[arg-type]
               if isinstance(getattr(obj, f.name), tuple)
               or hasattr(getattr(obj, f.name), "__dataclass_fields__")}
    return _fold(replace(obj, **changes))  # type: ignore[type-var]


def unroll(stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
    """``stmts`` with their small loops (:func:`small`) unrolled, the loops inside them
    too."""
    return tuple(t for s in stmts for t in (
        _expand((s,)) if isinstance(s, ir.ForRange) and small(s) else (s,)))


def tiles(stmts: tuple[ir.Stmt, ...], arrays: set[str]
          ) -> tuple[dict[tuple[str, tuple[int, ...]], str], set[tuple[str, tuple[int, ...]]]]:
    """The elements of the local arrays among ``arrays`` that ``stmts`` keep in scalars
    (each element to its scalar's name), and those of them ``stmts`` store to: the arrays
    every access of which has constant indices, at most :data:`TILE` elements in all."""
    refs: dict[str, int] = {}
    seen: dict[str, set[tuple[int, ...]]] = {}
    stored: set[tuple[str, tuple[int, ...]]] = set()
    bad: set[str] = set()
    for node in nodes_in(stmts):
        if isinstance(node, ir.Var) and node.name in arrays:
            refs[node.name] = refs.get(node.name, 0) + 1
        if isinstance(node, (ir.LocalLoad, ir.LocalStore)) and node.base.name in arrays:
            name = node.base.name
            shape = node.base.type.shape  # type: ignore[union-attr]
            index = tuple(i.value if isinstance(i, ir.Const) and type(i.value) is int else -1
                          for i in node.index)
            if not all(0 <= i < n for i, n in zip(index, shape, strict=True)):  # type: ignore[operator]
                bad.add(name)
                continue
            seen.setdefault(name, set()).add(index)
            refs[name] = refs.get(name, 0) - 1
            if isinstance(node, ir.LocalStore):
                stored.add((name, index))
    kept = {name: sorted(idx) for name, idx in seen.items()
            if name not in bad and not refs[name]}
    if not kept or sum(map(len, kept.values())) > TILE:
        return {}, set()
    regs = {(name, index): f"_r_{name}_{'_'.join(map(str, index))}"
            for name, idx in kept.items() for index in idx}
    return regs, {key for key in stored if key in regs}


def accumulates(stmts: tuple[ir.Stmt, ...], stored: set[tuple[str, tuple[int, ...]]]) -> bool:
    """True when ``stmts`` load an element of ``stored`` (an accumulator of a tile)."""
    return any(isinstance(node, ir.LocalLoad) and all(isinstance(i, ir.Const) for i in node.index)
               and (node.base.name, tuple(i.value for i in node.index)) in stored  # type: ignore[union-attr]
               for node in nodes_in(stmts))
