"""CPU atomics (``gompute_cpu.atomics``) against NumPy, under real thread contention.

Every contended test runs a ``prange`` loop of 200,000 updates on a few slots
with all of numba's threads (2 on the reference host) and checks two things
against NumPy: the final array (``np.add.at``-style oracle), and the old
values returned. For any read-modify-write ``new = f(old, v)`` whose updates
of one slot happen one after another, the returned olds chain: per slot, the
multiset ``{initial} + {f(old_k, v_k)}`` equals ``{old_k} + {final}``. A lost
update (two updates reading the same old value) breaks both checks.
``test_plain_read_modify_write_loses_updates`` shows that the same loop
without atomics does lose updates here, so the checks can fail.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numba
import numpy as np
import pytest
from gompute_cpu.atomics import (
    atomic_add,
    atomic_cas,
    atomic_exch,
    atomic_max,
    atomic_min,
    atomic_sub,
)
from llvmlite import ir
from numba import njit, prange
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.extending import intrinsic

INTS = (np.int32, np.uint32, np.int64, np.uint64)
FLOATS = (np.float32, np.float64)
DTYPES = INTS + FLOATS
UPDATES = 200_000
SLOTS = 4
ATTEMPTS = 5
MIN_SWITCHES = 1000  # of 200,000 ticks, the owning thread changes at least this often


@pytest.fixture(autouse=True, scope="module")
def all_threads() -> Iterator[None]:
    """Run the parallel loops on every thread numba has (the host's cores)."""
    before = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    yield
    numba.set_num_threads(before)


# --- the contended loops: one compiled function per atomic ------------------------------

def _parallel_updates(atomic: Any) -> Any:
    """``run(arr, slots, table) -> (olds, owner)``: in a ``prange`` of ``table.size``
    iterations, each takes the next tick ``t`` of a shared clock and does
    ``olds[t] = atomic(arr, slots[t], table[t])``; ``owner[t]`` is the thread that did.

    Indexing by the clock's tick, not the loop index, makes the values arrive in
    the order of ``table`` across all threads at once, so a ramp in ``table`` makes
    every thread keep replacing the others' min/max.
    """

    @njit(parallel=True)
    def run(arr: np.ndarray, slots: np.ndarray,
            table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        clock = np.zeros(1, np.int64)
        olds = np.zeros(table.size, arr.dtype)
        owner = np.zeros(table.size, np.int64)
        for _ in prange(table.size):
            t = atomic_add(clock, 0, 1)
            olds[t] = atomic(arr, slots[t], table[t])
            owner[t] = numba.get_thread_id()
        return olds, owner

    return run


PARALLEL = {name: _parallel_updates(fn) for name, fn in
            {"add": atomic_add, "sub": atomic_sub, "min": atomic_min, "max": atomic_max,
             "exch": atomic_exch}.items()}


def _python_min(old: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.where(v < old, v, old)


def _python_max(old: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.where(v > old, v, old)


#: ``new = f(old, v)`` of each operation, element-wise in the array's dtype (integers wrap).
UPDATE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "min": _python_min, "max": _python_max,
    "exch": lambda old, v: v,
}


def _values(dtype: type, op: str, rng: np.random.Generator) -> np.ndarray:
    """Update operands for ``op``, in clock order.

    add/sub/exch: integers over the whole range (they wrap), floats integer-valued
    and small, so every partial float sum is exact in any order. min/max: a noisy
    ramp that rises (max) or falls (min) with the tick, so concurrent updates keep
    replacing each other; it crosses 0 for signed types and floats and the sign
    bit for unsigned ones (where a signed compare would be wrong).
    """
    if op in ("min", "max"):
        ramp = np.arange(UPDATES) if op == "max" else np.arange(UPDATES)[::-1]
        steps = (ramp * 4 + rng.integers(0, 8, UPDATES) - UPDATES * 2).astype(dtype)
        if np.issubdtype(dtype, np.unsignedinteger):
            steps += dtype(2 ** (np.iinfo(dtype).bits - 1))  # wraps: -x becomes 2**(b-1) - x
        return steps
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, UPDATES, dtype=dtype, endpoint=True)
    return rng.integers(-50, 51, UPDATES).astype(dtype)


def _final_oracle(op: str, initial: np.ndarray, slots: np.ndarray,
                  values: np.ndarray) -> np.ndarray:
    expected = initial.copy()
    if op == "exch":
        return expected  # order-dependent; checked through the chain of olds only
    {"add": np.add, "sub": np.subtract, "min": np.minimum,
     "max": np.maximum}[op].at(expected, slots, values)
    return expected


def _until_interleaved(run_and_check: Callable[[], np.ndarray]) -> bool:
    """Call ``run_and_check`` (it returns the owner of each tick) until the threads have
    interleaved often, ``ATTEMPTS`` times at most; whether they did.

    On a loaded host (other processes on the cores) the threads may run one
    after the other; the checks then pass whatever the atomics do, so the run is
    repeated until they did race, with a warning if they never did.
    """
    switches = []
    for _ in range(ATTEMPTS):
        owner = run_and_check()
        switches.append(int(np.count_nonzero(owner[1:] != owner[:-1])))
        if switches[-1] >= MIN_SWITCHES:
            return True
    warnings.warn(f"threads hardly interleaved (thread switches per run: {switches}): "
                  "this run could not tell atomics from plain updates", stacklevel=2)
    return False


@pytest.mark.parametrize("op", sorted(PARALLEL))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_contended_updates_match_numpy(dtype: type, op: str) -> None:
    rng = np.random.default_rng(7)
    slots = rng.integers(0, SLOTS, UPDATES)
    values = _values(dtype, op, rng)
    initial = _values(dtype, op, rng)[:SLOTS]
    final = _final_oracle(op, initial, slots, values)

    def run_and_check() -> np.ndarray:
        arr = initial.copy()
        olds, owner = PARALLEL[op](arr, slots, values)
        assert olds.dtype == dtype
        if op != "exch":
            np.testing.assert_array_equal(arr, final)
        news = UPDATE[op](olds, values).astype(dtype)
        for slot in range(SLOTS):
            mine = slots == slot
            before = np.sort(np.concatenate([initial[slot:slot + 1], news[mine]]))
            after = np.sort(np.concatenate([olds[mine], arr[slot:slot + 1]]))
            np.testing.assert_array_equal(before, after, err_msg=f"slot {slot}: olds do not chain")
        return owner

    _until_interleaved(run_and_check)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_counter_returns_every_old_value_once(dtype: type) -> None:
    """All iterations add 1 to one counter: the olds are exactly 0, 1, ..., n - 1."""

    def run_and_check() -> np.ndarray:
        counter = np.zeros(3, dtype)
        olds, owner = PARALLEL["add"](counter, np.zeros(UPDATES, np.int64),
                                      np.ones(UPDATES, dtype))
        np.testing.assert_array_equal(counter, [UPDATES, 0, 0])
        np.testing.assert_array_equal(np.sort(olds), np.arange(UPDATES))
        return owner

    _until_interleaved(run_and_check)


@njit(parallel=True)
def _histogram(data: np.ndarray, bins: np.ndarray) -> None:
    for k in prange(data.size):
        atomic_add(bins, data[k], 1)


def test_histogram_equals_bincount() -> None:
    data = np.random.default_rng(3).integers(0, 256, 2**20, dtype=np.uint8)
    bins = np.zeros(256, np.uint32)
    _histogram(data, bins)
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=256))


def _element_pointer(context: Any, builder: ir.IRBuilder, arr: types.Array,
                     args: list) -> ir.Value:
    ary = context.make_array(arr)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, arr, ary, [args[1]])


@intrinsic
def _separate_load(typingctx: Any, arr: types.Array, i: types.Integer) -> Any:
    """``arr[i]`` read by one (monotonic) atomic load: a plain ``mov``, never hoisted."""
    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: list) -> ir.Value:
        return builder.load_atomic(_element_pointer(context, builder, arr, args), "monotonic",
                                   arr.dtype.bitwidth // 8,
                                   typ=context.get_value_type(arr.dtype))
    return arr.dtype(arr, i), codegen


@intrinsic
def _separate_store(typingctx: Any, arr: types.Array, i: types.Integer, v: types.Type) -> Any:
    """``arr[i] = v`` by one (monotonic) atomic store: a plain ``mov``, never sunk."""
    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: list) -> None:
        value = context.cast(builder, args[2], sig.args[2], arr.dtype)
        builder.store_atomic(value, _element_pointer(context, builder, arr, args), "monotonic",
                             arr.dtype.bitwidth // 8)
    return types.none(arr, i, v), codegen


@njit
def _plain_add(arr: np.ndarray, i: int, v: Any) -> Any:
    """``atomic_add`` as a load and a separate store: what the atomics must not be."""
    old = _separate_load(arr, i)
    _separate_store(arr, i, old + v)
    return old


_PLAIN_COUNT = _parallel_updates(_plain_add)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one thread cannot race")
def test_plain_read_modify_write_loses_updates() -> None:
    """The control: a load-add-store in the same loop loses updates once threads interleave.

    Without this the contended tests would prove nothing: a race that never
    happens passes them with any implementation.
    """
    totals = []

    def run_and_check() -> np.ndarray:
        counter = np.zeros(1, np.int64)
        _, owner = _PLAIN_COUNT(counter, np.zeros(UPDATES, np.int64),
                                np.ones(UPDATES, np.int64))
        totals.append(int(counter[0]))
        return owner

    if _until_interleaved(run_and_check):
        assert totals[-1] < UPDATES, f"no update lost in {UPDATES} racing increments"


# --- compare-and-swap ---------------------------------------------------------------------

@njit(parallel=True)
def _cas_max(out: np.ndarray, values: np.ndarray) -> None:
    """``out[0] = max(out[0], values...)`` with a compare-and-swap loop (values not 0)."""
    for k in prange(values.size):
        v = values[k]
        old = out[0]
        while v > old:
            seen = atomic_cas(out, 0, old, v)
            if seen == old:
                break
            old = seen


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_cas_loop_max_equals_numpy_max(dtype: type) -> None:
    values = np.random.default_rng(5).normal(0.0, 1e3, UPDATES).astype(dtype)
    out = np.full(1, -np.inf, dtype)
    _cas_max(out, values)
    assert out[0] == values.max()


def _return_types(function: Any, arr: np.ndarray) -> set:
    """The return types numba inferred for ``function`` called with an array like ``arr``."""
    return {sig.return_type for sig in function.nopython_signatures
            if sig.args[0] == numba.typeof(arr)}


@njit
def _cas(arr: np.ndarray, i: int, expected: Any, v: Any) -> Any:
    return atomic_cas(arr, i, expected, v)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_cas_stores_only_on_match_and_returns_the_old_value(dtype: type) -> None:
    arr = np.array([5, 7], dtype)
    assert _cas(arr, 1, dtype(6), dtype(9)) == 7  # mismatch: untouched
    np.testing.assert_array_equal(arr, np.array([5, 7], dtype))
    assert _cas(arr, 1, dtype(7), dtype(9)) == 7
    assert _return_types(_cas, arr) == {numba.from_dtype(dtype)}
    np.testing.assert_array_equal(arr, np.array([5, 9], dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_float_cas_compares_bit_patterns(dtype: type) -> None:
    zero = np.array([0.0], dtype)
    assert _cas(zero, 0, dtype(-0.0), dtype(1.0)) == 0  # -0.0 == +0.0, other bits
    assert zero[0] == 0 and not np.signbit(zero[0])
    nan = np.array([np.nan], dtype)
    assert np.isnan(_cas(nan, 0, dtype(np.nan), dtype(2.0)))  # same NaN bits: swaps
    assert nan[0] == 2.0


# --- single-threaded semantics --------------------------------------------------------------

@njit
def _apply(arr: np.ndarray, i: Any, v: Any) -> tuple:
    """Every read-modify-write atomic once, each on its own element ``i + k``."""
    return (atomic_add(arr, i, v), atomic_sub(arr, i + 1, v), atomic_min(arr, i + 2, v),
            atomic_max(arr, i + 3, v), atomic_exch(arr, i + 4, v))


def _python_apply(arr: np.ndarray, v: Any) -> tuple:
    """The oracle of ``_apply(arr, 0, v)`` on NumPy scalars of the array's dtype."""
    old = tuple(arr[:5])
    v = arr.dtype.type(v)
    with np.errstate(all="ignore"):
        arr[:5] = (old[0] + v, old[1] - v, v if v < old[2] else old[2],
                   v if v > old[3] else old[3], v)
    return old


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_single_updates_match_numpy_scalars(dtype: type) -> None:
    """Wrap at the ends, signed/unsigned min and max, and floats on special values."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        starts = [info.min, info.max, 0, 1, info.max // 2 + 1]
        operands = [info.min, info.max, 1, 0, info.max // 2 + 1]
    else:
        starts = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5]
        operands = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.25]
    for start in starts:
        for v in operands:
            arr = np.full(6, start, dtype)
            expected = arr.copy()
            want = _python_apply(expected, dtype(v))
            got = _apply(arr, 0, dtype(v))
            np.testing.assert_array_equal(np.array(got, dtype).view(f"u{arr.itemsize}"),
                                          np.array(want, dtype).view(f"u{arr.itemsize}"))
            np.testing.assert_array_equal(arr.view(f"u{arr.itemsize}"),
                                          expected.view(f"u{arr.itemsize}"),
                                          err_msg=f"start {start!r}, v {v!r}")
    assert _return_types(_apply, arr) == {types.UniTuple(numba.from_dtype(dtype), 5)}


def test_float_min_max_keep_the_old_value_on_ties_and_nan() -> None:
    arr = np.array([0.0, 0.0, np.nan, np.nan, 1.0, 1.0])
    _apply_min_max = njit(lambda a: (atomic_min(a, 0, -0.0), atomic_max(a, 1, -0.0),
                                     atomic_min(a, 2, 1.0), atomic_max(a, 3, 1.0),
                                     atomic_min(a, 4, np.nan), atomic_max(a, 5, np.nan)))
    _apply_min_max(arr)
    assert not np.signbit(arr[:2]).any()  # -0.0 does not replace +0.0
    assert np.isnan(arr[2:4]).all()  # a NaN element stays
    np.testing.assert_array_equal(arr[4:], [1.0, 1.0])  # a NaN operand never replaces


@pytest.mark.parametrize("index_type", [np.uint8, np.int32, np.uint64, np.int64])
def test_operands_are_converted_to_the_array_dtype(index_type: type) -> None:
    ints = np.zeros(6, np.int32)
    _apply(ints, index_type(0), np.float64(-2.75))  # truncated to -2
    np.testing.assert_array_equal(ints, [-2, 2, -2, 0, -2, 0])
    small = np.zeros(6, np.uint32)
    _apply(small, index_type(0), np.int64(2**32 + 3))  # wraps to 3
    np.testing.assert_array_equal(small, [3, 2**32 - 3, 0, 3, 3, 0])
    floats = np.zeros(6, np.float32)
    _apply(floats, index_type(0), True)
    np.testing.assert_array_equal(floats, [1, -1, 0, 1, 1, 0])


def test_usable_from_generated_source() -> None:
    source = ("from numba import njit, prange\n"
              "from gompute_cpu.atomics import atomic_add\n"
              "@njit(parallel=True)\n"
              "def total(out, xs):\n"
              "    for k in prange(xs.size):\n"
              "        atomic_add(out, k % 2, xs[k])\n")
    namespace: dict[str, Any] = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    xs = np.arange(UPDATES, dtype=np.int64)
    out = np.zeros(2, np.int64)
    namespace["total"](out, xs)
    np.testing.assert_array_equal(out, [xs[::2].sum(), xs[1::2].sum()])


@pytest.mark.parametrize(("arr", "index", "message"), [
    (np.zeros(4, np.int8), 0, "argument 'arr' must be a 1-D array"),
    (np.zeros((2, 2), np.int32), 0, "argument 'arr' must be a 1-D array"),
    (np.zeros(4, np.int32), 0.5, "argument 'i' must be an integer"),
])
def test_bad_arguments_are_typing_errors(arr: np.ndarray, index: Any, message: str) -> None:
    with pytest.raises(TypingError, match=message):
        njit(lambda a, i: atomic_add(a, i, 1))(arr, index)


def test_read_only_array_is_a_typing_error() -> None:
    arr = np.zeros(4, np.int32)
    arr.flags.writeable = False
    with pytest.raises(TypingError, match="atomic_cas: argument 'arr' is a read-only array"):
        njit(lambda a: atomic_cas(a, 0, 0, 1))(arr)
