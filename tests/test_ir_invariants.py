"""Every function the frontend produces for the conformance catalogue (and the frontend tests'
own kernels) satisfies the invariants renderers rely on (``ir/nodes.py`` docstring)."""

from __future__ import annotations

import numpy as np
import pytest

from gompute_core.frontend.names import is_safe
from gompute_core.ir.nodes import (
    ArrayType,
    Assign,
    Binary,
    CallFunction,
    CallIntrinsic,
    Cast,
    Compare,
    Const,
    Field,
    ForRange,
    Function,
    If,
    Index,
    LocalLoad,
    LocalStore,
    LocalType,
    Logical,
    MakeTuple,
    Not,
    Return,
    Select,
    StructType,
    TupleItem,
    TupleType,
    Unary,
    Var,
    While,
)
from gompute_core.testing.catalogue import entries
from gompute_core.types import is_float, is_int

BOOL = np.bool_


class Checker:
    """Walks one function, checking types against declarations and node invariants."""

    def __init__(self, fn: Function, known: dict[str, Function]) -> None:
        self.fn = fn
        self.known = known
        self.scope = dict(fn.args) | dict(fn.locals)
        assert len(self.scope) == len(fn.args) + len(fn.locals), "duplicate names"
        for name in self.scope:
            assert is_safe(name), name

    def expr(self, e) -> None:
        if isinstance(e, Const):
            if e.type is BOOL:
                assert isinstance(e.value, bool)
            elif is_int(e.type):
                info = np.iinfo(e.type)
                assert type(e.value) is int and info.min <= e.value <= info.max, e
            else:
                assert type(e.value) is float, e
        elif isinstance(e, Var):
            assert self.scope[e.name] == e.type, e
        elif isinstance(e, Field):
            self.expr(e.base)
            assert isinstance(e.base.type, StructType)
            assert e.base.type.layout.field(e.name).type == e.type
        elif isinstance(e, Index):
            self.expr(e.base)
            self.expr(e.index)
            assert isinstance(e.base.type, ArrayType) and e.base.type.elem == e.type
            assert is_int(e.index.type)
        elif isinstance(e, Unary):
            self.expr(e.operand)
            assert e.operand.type is e.type
            if e.op == "invert":
                assert is_int(e.type)
        elif isinstance(e, Not):
            self.expr(e.operand)
            assert e.operand.type is BOOL and e.type is BOOL
        elif isinstance(e, Binary):
            self.expr(e.lhs)
            self.expr(e.rhs)
            assert e.lhs.type is e.type and e.rhs.type is e.type, e
            if e.op == "truediv":
                assert is_float(e.type)
            if e.op in ("bitand", "bitor", "bitxor", "lshift", "rshift"):
                assert not is_float(e.type)
        elif isinstance(e, Compare):
            self.expr(e.lhs)
            self.expr(e.rhs)
            assert e.lhs.type is e.rhs.type and e.type is BOOL, e
        elif isinstance(e, Logical):
            self.expr(e.lhs)
            self.expr(e.rhs)
            assert e.lhs.type is BOOL and e.rhs.type is BOOL and e.type is BOOL
        elif isinstance(e, Select):
            for part in (e.cond, e.if_true, e.if_false):
                self.expr(part)
            assert e.cond.type is BOOL
            assert e.if_true.type is e.type and e.if_false.type is e.type
        elif isinstance(e, Cast):
            self.expr(e.value)
            assert e.value.type is not e.type, f"no-op cast {e}"
        elif isinstance(e, CallIntrinsic):
            for a in e.args:
                self.expr(a)
            arg_type = e.args[0].type
            assert all(a.type is arg_type for a in e.args)
            if e.func in ("isnan", "isinf", "isfinite"):
                assert e.type is BOOL and is_float(arg_type)
            else:
                assert arg_type is e.type
        elif isinstance(e, CallFunction):
            callee = self.known[e.func]  # callees come first
            assert len(callee.args) == len(e.args)
            for a, (_, t) in zip(e.args, callee.args, strict=True):
                self.expr(a)
                assert a.type == t
            assert callee.ret == e.type
        elif isinstance(e, LocalLoad):
            self.local_access(e.base, e.index)
            assert e.base.type.elem == e.type
        elif isinstance(e, MakeTuple):
            for item in e.items:
                self.expr(item)
            assert isinstance(e.type, TupleType)
            assert tuple(item.type for item in e.items) == e.type.elems, e
        elif isinstance(e, TupleItem):
            self.expr(e.value)
            assert isinstance(e.value.type, TupleType)
            assert e.value.type.elems[e.index] == e.type
        else:
            raise AssertionError(f"unexpected node {e!r}")

    def local_access(self, base, index) -> None:
        """A local array's element: a declared array, one integer index per dimension."""
        self.expr(base)
        assert isinstance(base.type, LocalType)
        assert len(index) == len(base.type.shape)
        for i in index:
            self.expr(i)
            assert is_int(i.type)

    def stmts(self, body) -> None:
        for s in body:
            if isinstance(s, Assign):
                self.expr(s.value)
                assert s.value.type == self.scope[s.name], s
            elif isinstance(s, LocalStore):
                self.local_access(s.base, s.index)
                self.expr(s.value)
                assert s.value.type == s.base.type.elem
            elif isinstance(s, Return):
                self.expr(s.value)
                assert s.value.type == self.fn.ret
            elif isinstance(s, If):
                self.expr(s.cond)
                assert s.cond.type is BOOL
                self.stmts(s.body)
                self.stmts(s.orelse)
            elif isinstance(s, While):
                self.expr(s.cond)
                assert s.cond.type is BOOL
                self.stmts(s.body)
            elif isinstance(s, ForRange):
                t = self.scope[s.var]
                assert is_int(t)
                for part in (s.start, s.stop, s.step):
                    self.expr(part)
                    assert part.type is t
                assert not (isinstance(s.step, Const) and s.step.value == 0)
                self.stmts(s.body)


def check_functions(fns) -> None:
    known: dict[str, Function] = {}
    for fn in fns:
        assert fn.name not in known
        checker = Checker(fn, known)
        checker.stmts(fn.body)
        known[fn.name] = fn


CATALOGUE = [e for e in entries().values() if e.spec_kind not in ("gather", "scatter")]


@pytest.mark.parametrize("entry", CATALOGUE, ids=[e.key for e in CATALOGUE])
def test_catalogue_kernels_satisfy_ir_invariants(entry):
    kir = entry.spec().lower()
    check_functions(kir.functions)
    assert kir.functions[-1].name in (kir.element, kir.pre)


def test_frontend_test_kernels_satisfy_ir_invariants():
    from test_frontend_support import SCALE, f32, i32

    from gompute_core.frontend import lower

    for fn, types, ret in [
        (lambda x, p: x * p.scale if p.flag else x / 3, [f32, SCALE], None),
        (lambda a, b: (a // b) % 7 + (a << 2) - (~b), [i32, np.uint8], None),
        # `and` returns a NumPy bool or the Python bool of `not`: one declared return type
        # converts each (an inferred one is refused, as docs/kernel-language.md says)
        (lambda a, b: a < b < 10 and not a == 3, [np.int64, np.uint64], np.bool_),
    ]:
        check_functions(lower(fn, types, ret, "k"))
