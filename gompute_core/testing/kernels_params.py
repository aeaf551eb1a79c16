"""Params shapes and fusion pipelines of the conformance suite (kernels are oracles too)."""

import enum
import math

import gompute_core as g
from gompute_core.testing.kernels import COEF


@g.params
class AllScalars:
    """Every scalar field type but f16 (see :class:`Halves`), in an order that needs padding."""

    f_bool: bool
    f_i8: g.i8
    f_f64: g.f64
    f_u16: g.u16
    f_i32: g.i32
    f_u8: g.u8
    f_i64: g.i64
    f_u32: g.u32
    f_f32: g.f32
    f_u64: g.u64
    f_i16: g.i16


def all_ints(x, i, p):
    """map_indexed over u64: element i returns integer field i % 9 (sign-extended, wrapped)."""
    k = i % 9
    if k == 0:
        return g.u64(p.f_bool)
    if k == 1:
        return g.u64(p.f_i8)
    if k == 2:
        return g.u64(p.f_u16)
    if k == 3:
        return g.u64(p.f_i32)
    if k == 4:
        return g.u64(p.f_u8)
    if k == 5:
        return g.u64(p.f_i64)
    if k == 6:
        return g.u64(p.f_u32)
    if k == 7:
        return p.f_u64 ^ x
    return g.u64(p.f_i16)


def all_floats(x, i, p):
    """map_indexed over f64: element i returns float field i % 2, plus x."""
    if i % 2 == 0:
        return g.f64(p.f_f32) + x
    return p.f_f64 + x


@g.params
class Halves:
    """f16 fields (scalar and array) between bytes: for backends that run f16."""

    tag: g.u8
    h: g.f16
    odd: g.u8
    hs: g.Array[g.f16, 3]


def half_fields(x, i, p):
    """map_indexed over f32 reading every field of ``Halves``."""
    return g.f32(p.h) * x + g.f32(p.hs[i % 3]) - g.f32(p.tag) + g.f32(p.odd)


class Shape(enum.IntEnum):
    """An enum with non-contiguous tags."""

    LINE = 0
    SQUARE = 3
    CUBE = 7


@g.params
class NestInner:
    """A nested params record."""

    w: g.f64
    k: g.i16


@g.params
class NestDeep:
    """A record nested two levels down."""

    z: g.u8
    inner: NestInner


@g.params
class NestOuter:
    """Nested records, fixed arrays (dynamically indexed), an enum and a bool."""

    tag: g.u8
    inner: NestInner
    coef: g.Array[g.f32, 5]
    shape: g.Enum[Shape, g.i16]
    flag: bool
    offs: g.Array[g.i16, 3]
    deep: NestDeep


def nested(x, i, p):
    """map_indexed over f32 reading every field of ``NestOuter``."""
    c = p.coef[i % 5]
    y = x * c + g.f32(p.offs[i % 3])
    if p.shape == Shape.SQUARE:
        y = y * y
    elif p.shape == Shape.CUBE:
        y = y * y * y
    if p.flag:
        y = y + g.f32(p.inner.w)
    return y - g.f32(p.inner.k) + g.f32(p.deep.inner.w) * g.f32(p.tag) - g.f32(p.deep.z)


@g.params
class PolarWire:
    """The device view of :class:`Polar`."""

    r: g.f32
    cos_t: g.f32
    sin_t: g.f32


@g.params
class Polar:
    """A custom boundary class: host fields that cannot cross, converted to ``PolarWire``."""

    gpu_layout = PolarWire

    def __init__(self, r: float, theta: float) -> None:
        self.r = r
        self.theta = theta

    def to_gpu(self) -> PolarWire:
        """The wire record the kernel sees."""
        return PolarWire(r=self.r, cos_t=math.cos(self.theta), sin_t=math.sin(self.theta))

    @staticmethod
    def from_gpu(wire: PolarWire) -> "Polar":
        """Rebuild the host object from its wire record."""
        return Polar(float(wire.r), math.atan2(float(wire.sin_t), float(wire.cos_t)))


def rotate(x, p):
    """map over f32 with a custom-boundary params object (sees ``PolarWire`` fields)."""
    return x * p.cos_t * p.r + p.sin_t


class Scale:
    """A fusion op class with a static ``eval``."""

    @staticmethod
    def eval(x, p):
        """x * a."""
        return x * p.a


class Shift:
    """A fusion op class with a static ``eval``."""

    @staticmethod
    def eval(x, p):
        """x + b."""
        return x + p.b


class Square:
    """A fusion op class with a static ``eval``."""

    @staticmethod
    def eval(x, p):
        """x * x."""
        return x * x


def absolute(x, p):
    """A plain function lifted by ``g.Unary``."""
    return abs(x)


def fused_pipeline(t: type) -> object:
    """``Scale -> Shift -> Unary(abs) -> Square -> Shift`` over value type ``t``."""
    p = COEF[t]
    return g.Fused(t, p, [Scale, Shift, g.Unary(t, p, absolute), Square, Shift])


def composed(x, p):
    """The oracle of :func:`fused_pipeline`: the ops applied one after another."""
    return Shift.eval(Square.eval(absolute(Shift.eval(Scale.eval(x, p), p), p), p), p)
