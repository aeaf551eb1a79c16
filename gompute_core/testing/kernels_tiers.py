"""Kernels of the buffers, launch, streams, threads and names tiers (each also its oracle).

``spin`` is the *long kernel*: a 32-bit linear congruential step repeated
``p.iters`` times per element, so a launch can be made to take as long as a
test needs (:func:`long_work` sizes it on the backend under test) and its
result is still checked exactly (:func:`spin_oracle` composes the steps).
``Reserved`` has fields named like words C, C++, CUDA, OpenCL, Metal and
GLSL reserve, and :data:`RESERVED_SPECS` uses such words as kernel names: a
renderer must mangle them, never fail or miscompile.
"""

import numpy as np

import gompute_core as g

LCG_A, LCG_C = 1664525, 1013904223


@g.params
class Spin:
    """How many LCG steps each element takes."""

    iters: g.u32


def spin(x, p: Spin):
    """``x`` after ``p.iters`` LCG steps (u32 wrap-around)."""
    for _ in range(p.iters):
        x = x * g.u32(LCG_A) + g.u32(LCG_C)
    return x


def spin_oracle(x: np.ndarray, iters: int) -> np.ndarray:
    """:func:`spin` over a whole array: the ``iters`` steps composed into one affine map."""
    a, c = 1, 0
    for _ in range(iters):
        a, c = (a * LCG_A) % 2**32, (c * LCG_A + LCG_C) % 2**32
    with np.errstate(over="ignore"):
        return x * np.uint32(a) + np.uint32(c)


SPIN = g.map("gct_tier_spin", g.u32, Spin, spin)


def twice_plus_one(x):
    """``2x + 1``: the short kernel of the ordering and threads tests."""
    return x * g.f32(2) + g.f32(1)


TWICE = g.map("gct_tier_twice", g.f32, None, twice_plus_one)
TOTAL = g.sum("gct_tier_total", g.i64)


@g.params
class Reserved:
    """Fields named like reserved words of the C-family and shading languages."""

    int: g.f32
    float: g.f32
    double: g.i32
    kernel: g.f32
    local: g.i32
    private: g.i32
    constant: g.f32
    half: g.f32
    this: g.i32
    new: g.i32
    template: g.i32
    register: g.i32
    volatile: g.i32
    device: g.i32
    threadgroup: g.i32
    uniform: g.i32
    sin: g.f32
    exp: g.f32
    main: g.i32


def reserved_body(x, p: Reserved):
    """Reads every field (an oracle in plain Python like every kernel here)."""
    ints = (p.double + p.local + p.private + p.this + p.new + p.template + p.register
            + p.volatile + p.device + p.threadgroup + p.uniform + p.main)
    return (x * p.int + p.float + p.kernel * p.constant + p.half + p.sin * p.exp
            + g.f32(ints))


RESERVED_NAMES = ("main", "kernel", "sin", "exp", "sqrt", "half", "float4", "device",
                  "threadgroup", "uniform", "barrier", "printf", "memcpy", "abs", "min",
                  "get_global_id", "atomic_add", "local", "constant", "uchar")
"""Kernel names that are reserved words or built-ins of some C-family target."""

RESERVED_SPECS = {name: g.map(name, g.f32, Reserved, reserved_body)
                  for name in RESERVED_NAMES}
