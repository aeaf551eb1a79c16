"""C identifiers for params structs, deterministic across processes.

A struct is named after its class's ``__qualname__``. When that qualname is
already a plain identifier that C and C++ accept (``Scale``), it is used as
is. Otherwise (``Outer.Inner``, ``make.<locals>.P``, a C keyword such as
``float``, a name reserved in C++ such as ``_Tag`` or ``a__b``) the
sanitized name gets a suffix: the first 8 hex digits of the SHA-256 of
``module:qualname``, so ``Outer.Inner`` becomes ``Outer_Inner_1a2b3c4d`` and
can never collide with a class really called ``Outer_Inner``.

Names depend only on the qualname (and, when suffixed, the module): never on
import order, ``id()`` or hash randomization, so rendered source and compile
caches are the same in every process. Two different classes with one plain
name can only clash inside one params tree (a kernel declares only its own
tree); :func:`check_unique_struct_names` refuses that at definition time.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import AbiError
from ..ir.nodes import ArrayType, StructType
from .layout import StructLayout

_C_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires restrict return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try
    typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
    xor_eq half dim3 size_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t
    uint32_t uint64_t main
""".split())

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]+")
_UNDERSCORES = re.compile(r"__+")

def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]


def _sanitize(qualname: str) -> str:
    name = _UNDERSCORES.sub("_", _NOT_IDENT.sub("_", qualname)).strip("_")
    if not name or name[0].isdigit():
        name = "P_" + name if name else "P"
    return name


def display_name(cls: object) -> str:
    """The class name used in messages: the qualname without the ``f.<locals>.`` prefixes."""
    qualname: str = getattr(cls, "__qualname__", None) or repr(cls)
    return qualname.rsplit("<locals>.", 1)[-1]


def c_struct_name(module: str, qualname: str) -> str:
    """The C struct name of the class ``module.qualname`` (see the module docstring)."""
    base = _sanitize(qualname)
    if base != qualname or base in _C_KEYWORDS:
        return f"{base}_{_digest(f'{module}:{qualname}')}"
    return base


def check_unique_struct_names(layout: StructLayout, where: str) -> None:
    """Refuse a params tree in which two different structs share one C name."""
    seen: dict[str, StructLayout] = {}

    def visit(lay: StructLayout) -> None:
        other = seen.setdefault(lay.name, lay)
        if other is not lay and other != lay:
            raise AbiError(
                f"{where}: two different params classes are both named {lay.name!r} in this "
                "params tree (from different modules); rename one of them")
        for f in lay.fields:
            t = f.type
            while isinstance(t, ArrayType):
                t = t.elem
            if isinstance(t, StructType):
                visit(t.layout)  # type: ignore[arg-type]

    visit(layout)
