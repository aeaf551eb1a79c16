"""C identifiers for params structs, deterministic across processes.

A struct is named after its class's ``__qualname__``. When that qualname is
already a plain identifier that C and C++ accept (``Scale``), it is used as
is. Otherwise (``Outer.Inner``, ``make.<locals>.P``, a C keyword such as
``float``, a name reserved in C++ such as ``_Tag`` or ``a__b``) the
sanitized name gets a suffix: the first 8 hex digits of the SHA-256 of
``module:qualname``, so ``Outer.Inner`` becomes ``Outer_Inner_1a2b3c4d`` and
can never collide with a class really called ``Outer_Inner``. The same
suffix is used when two classes of different modules share a plain name in
one process: the first one registered keeps the plain name.

Names depend only on the module, the qualname and (for that last case) on
which class was decorated first; never on ``id()`` or hash randomization.
"""

from __future__ import annotations

import hashlib
import re

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

# C name -> "module:qualname" of the class that owns it in this process
_owners: dict[str, str] = {}


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
    key = f"{module}:{qualname}"
    base = _sanitize(qualname)
    suffixed = f"{base}_{_digest(key)}"
    if base != qualname or base in _C_KEYWORDS:
        return suffixed
    owner = _owners.setdefault(base, key)
    return base if owner == key else suffixed
