"""Kernel functions outside the language, for ``test_frontend_corpus.py``: each ``spec_*``
is lowered as a map over f32, each ``raw_*`` as a raw kernel; every one must be a
``KernelSyntaxError`` at one of its own lines, never another exception. Several read a
local that an unsupported statement declared (the case that once raised an internal
``Unresolved``)."""
# ruff: noqa: F821, F841, B018, E731, SIM, PLR, RUF, B007, C416, UP
# mypy: ignore-errors

import gompute_core as g

B = g.builtins


def spec_list_then_store(x):
    rC = [0.0] * 16
    rC[1] = x
    return rC[1]


def spec_tuple_local(x):
    t = (x, x)
    return t[0]


def spec_read_later_assigned(x):
    y = rC
    rC = 1.0
    return x


def spec_store_unknown(x):
    for i in range(4):
        z[i] = x
    return x


def spec_listcomp(x):
    q = [x for _ in range(3)]
    return x


def spec_attr_store(x):
    x.real = 1
    return x


def spec_dict(x):
    d = {1: x}
    return d[1]


def spec_string(x):
    s = "a"
    return x


def spec_index_scalar(x):
    return x[0]


def spec_cycle(x):
    a = b
    b = a
    return a


def spec_augassign_list(x):
    acc = [x]
    acc[0] += x
    return acc[0]


def spec_set(x):
    return {x}


def spec_starred(x):
    a, *b = x, x, x
    return a


def spec_walrus(x):
    return (y := x)


def spec_lambda(x):
    f = lambda v: v
    return f(x)


def spec_try(x):
    try:
        return x
    except ValueError:
        return x


def spec_with(x):
    with open("f"):
        return x


def spec_nested_def(x):
    def h(v):
        return v
    return h(x)


def spec_global(x):
    global GLOB
    return x


def spec_is(x):
    return 1.0 if x is None else x


def spec_yield(x):
    yield x


def spec_del(x):
    y = x
    del y
    return x


def spec_for_list(x):
    for v in [1, 2]:
        x += v
    return x


def spec_print(x):
    print(x)
    return x


def spec_local_array_in_loop_store_before(x):
    for i in range(2):
        arr[i] = x
    arr = [0.0, 0.0]
    return x


def raw_list_then_store(d: g.GlobalPtr[g.f32], n: g.u64):
    rC = [0.0] * 16
    rC[1] = d[0]
    d[0] = rC[1]


def raw_store_before_pointer_alias(d: g.GlobalPtr[g.f32], n: g.u64):
    z[0] = 1.0
    z = d


def raw_tuple_index(d: g.GlobalPtr[g.f32], n: g.u64):
    t = (1, 2)
    d[t] = 1.0


def raw_list_augassign(d: g.GlobalPtr[g.f32], n: g.u64):
    x = [1.0, 2.0]
    x[0] += 1.0
    d[0] = x[0]


def raw_shared_reassigned(d: g.GlobalPtr[g.f32], n: g.u64):
    s = B.shared_array(g.f32, 4)
    s = 1.0


def raw_slice(d: g.GlobalPtr[g.f32], n: g.u64):
    d[0:2] = 1.0


def raw_pointer_local(d: g.GlobalPtr[g.f32], n: g.u64):
    e = d
    e[0] = 1.0


def raw_barrier_in_call(d: g.GlobalPtr[g.f32], n: g.u64):
    d[0] = B.barrier()


def raw_atomic_on_local(d: g.GlobalPtr[g.f32], n: g.u64):
    acc = 0.0
    B.atomic_add(acc, 0, 1.0)


def raw_return_value(d: g.GlobalPtr[g.f32], n: g.u64):
    return 1.0
