"""A corpus of constructs outside the kernel language (``unsupported_corpus.py``): each is
a ``KernelSyntaxError`` naming a line of its own function, never an internal exception
(an ``Unresolved`` once escaped for a store to a local declared by an unsupported
statement)."""

from __future__ import annotations

import inspect

import pytest
import unsupported_corpus as corpus

import gompute_core as g
from gompute_core.errors import KernelSyntaxError

SPEC = [f for n, f in vars(corpus).items() if n.startswith("spec_") and callable(f)]
RAW = [f for n, f in vars(corpus).items() if n.startswith("raw_") and callable(f)]


def _lines(fn: object) -> range:
    src, first = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return range(first, first + len(src))


def _assert_points_into(exc: KernelSyntaxError, fn: object) -> None:
    assert exc.filename == corpus.__file__, exc
    assert exc.lineno in _lines(fn), exc


@pytest.mark.parametrize("fn", SPEC, ids=lambda f: f.__name__)
def test_spec_construct_is_a_kernel_syntax_error_at_its_line(fn: object) -> None:
    spec = g.map(f"corpus_{fn.__name__}", g.f32, None, fn)  # type: ignore[attr-defined]
    with pytest.raises(KernelSyntaxError) as info:
        spec.lower()
    _assert_points_into(info.value, fn)


@pytest.mark.parametrize("fn", RAW, ids=lambda f: f.__name__)
def test_raw_construct_is_a_kernel_syntax_error_at_its_line(fn: object) -> None:
    kern = g.raw_kernel(name=f"corpus_{fn.__name__}")(fn)  # type: ignore[attr-defined]
    with pytest.raises(KernelSyntaxError) as info:
        kern.lower()
    _assert_points_into(info.value, fn)
