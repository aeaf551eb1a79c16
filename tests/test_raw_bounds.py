"""``bounds=`` of raw kernels: a parameter name, an expression of integer parameters or a
constant, checked at definition and on every launch (CPU backend; the packing backends
share the check through ``PackedBinder``)."""

from __future__ import annotations

import numpy as np
import pytest

import gompute_core as g
from gompute_core.errors import InvalidArgument
from gompute_core.raw.bounds import parse_bounds

pytest.importorskip("gompute_cpu")
B = g.builtins


@g.raw_kernel(block=32, bounds={"a": "M * K", "out": "M", "lut": 4})
def rb_rowsum(a: g.GlobalPtr[g.f32], lut: g.GlobalPtr[g.f32], out: g.GlobalPtr[g.f32],
              M: g.u32, K: g.i64):
    i = B.global_id(0)
    if i < M:
        acc = lut[i % 4]
        for k in range(K):
            acc += a[i * K + k]
        out[i] = acc


def _launch(kern: g.RawKernel, a: np.ndarray, lut: np.ndarray, out_n: int, m: int,
            k: int) -> np.ndarray:
    bufs = [kern.alloc(x.size, g.f32) for x in (a, lut)]
    for buf, x in zip(bufs, (a, lut), strict=True):
        buf.upload(x)
    out = kern.alloc(out_n, g.f32)
    kern.launch(g.Dim3.linear(max(m, 1), 32), 32, [*bufs, out, np.uint32(m), np.int64(k)])
    kern.synchronize()
    host = np.zeros(out_n, np.float32)
    out.download(host)
    return host


def test_expression_and_constant_bounds_accept_a_launch_that_fits() -> None:
    kern = g.RawKernel(rb_rowsum, "cpu")
    m, k = 5, 3
    a = np.arange(m * k, dtype=np.float32)
    lut = np.array([0.5, 1, 2, 4], np.float32)
    got = _launch(kern, a, lut, m, m, k)
    want = a.reshape(m, k).sum(axis=1, dtype=np.float32) + lut[np.arange(m) % 4]
    assert np.array_equal(got, want)


@pytest.mark.parametrize(("a_n", "lut_n", "out_n", "message"), [
    (14, 4, 5, r"'a' holds 14 elements but M \* K=15"),
    (15, 3, 5, "'lut' holds 3 elements but 4=4"),
    (15, 4, 4, "'out' holds 4 elements but M=5"),
])
def test_a_launch_past_a_bound_is_refused_naming_it(a_n: int, lut_n: int, out_n: int,
                                                    message: str) -> None:
    kern = g.RawKernel(rb_rowsum, "cpu")
    with pytest.raises(InvalidArgument, match=message):
        _launch(kern, np.zeros(a_n, np.float32), np.zeros(lut_n, np.float32), out_n, 5, 3)


def test_products_do_not_overflow() -> None:
    (bound,) = parse_bounds("k", [("a", g.GlobalPtr[g.f32]), ("M", g.u64), ("K", g.u64)],
                            {"a": "M*K + 1"})
    assert bound.need([None, np.uint64(2 ** 63), np.uint64(4)]) == 2 ** 65 + 1


@pytest.mark.parametrize(("bounds", "message"), [
    ({"a": "M * Q"}, "'Q' is not a parameter of the kernel"),
    ({"a": "M * x"}, "'x' is not an integer parameter"),
    ({"a": "M ** 2"}, r"'M \*\* 2' is not allowed"),
    ({"a": "M * 1.5"}, "1.5 is not a non-negative integer literal"),
    ({"a": "M *"}, "is not an expression"),
    ({"a": "len(M)"}, r"'len\(M\)' is not allowed"),
    ({"a": -1}, "a bound is not negative"),
    ({"a": 2.0}, "expected a parameter name"),
    ({"M": "M"}, "bounds key 'M' is not a GlobalPtr parameter"),
    (["a"], "bounds must be a dict"),
])
def test_bad_bounds_are_rejected_at_definition(bounds: object, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_bounds("k", [("a", g.GlobalPtr[g.f32]), ("x", g.f32), ("M", g.u64)], bounds)
