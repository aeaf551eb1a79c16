"""A seeded random-kernel generator for the differential fuzz tier (``test_fuzz.py``).

Each case is a small Python module written to a file (the frontend reads kernel source
with ``inspect``/``linecache``): a zip kernel ``kern(a, b)`` over two scalar types, with
helpers, locals, ``if``/``for range``/``while``, weak literals, captured NumPy and Python
constants, every operator, casts, ``int``/``float``/``bool``, conditional expressions,
``min``/``max``/``abs`` and ``g.math``. ``generate(seed, index, types)`` is a pure
function of its arguments: a failure is reproduced from the seed and index printed in
its message.

The generator stays inside the documented semantics where the oracle itself is not the
reference: locals and helper results are stored through an explicit cast (a local's type
is flow-insensitive, see docs/kernel-language.md), ``int()`` wraps a narrow integer cast
(a run-time Python int is 64 bits wide in a kernel), exponents are small constants, loop
bounds are constants. Transcendental ``g.math`` functions (:data:`TRANSCENDENTAL`) appear
only as the outermost call of the returned value, whose result the tier compares within
:data:`ULPS` of the type the call computed in; inside expressions only the exact ones are
used.
"""

from __future__ import annotations

import importlib.util
import os
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from types import FunctionType, ModuleType

import numpy as np

from ..types import short_name

ULPS: dict[type, int] = {np.float16: 1, np.float32: 4, np.float64: 4}
"""Tolerance of a transcendental ``g.math`` call, in ulps of the float type it computes in
(its argument's, as ``test_math``): ``g.math.log`` of an f32 is f32-accurate even when the
kernel returns it as f64."""

_INT_LITERALS = ("0", "1", "2", "3", "7", "100", "127", "-1", "-8", "128", "255", "-129",
                 "300", "65535", "-32768")
_FLOAT_LITERALS = ("0.0", "-0.0", "0.5", "1.5", "-2.25", "1e300", "-1e-310", "3.0e38",
                   "65504.0", "float('inf')", "-float('inf')", "float('nan')", "0.1")
_ARITH = ("+", "-", "*", "/", "//", "%")
_BITWISE = ("<<", ">>", "&", "|", "^")
_CMPOPS = ("==", "!=", "<", "<=", ">", ">=")
_EXACT_MATH = ("sqrt", "floor", "ceil", "trunc", "fabs")
_EXACT_MATH2 = ("copysign", "fmod")
TRANSCENDENTAL = ("exp", "log", "sin", "cos", "tanh", "atan", "log1p", "expm1")
"""The ``g.math`` functions that are not correctly rounded (compared within :data:`ULPS`)."""


def _ctor(short: str) -> str:
    """The kernel-code spelling of a scalar type's constructor (``g.f32``, ``np.bool_``)."""
    return "np.bool_" if short == "bool" else f"g.{short}"


@dataclass(frozen=True)
class FuzzCase:
    """One generated kernel: its source, its types and where it is written."""

    seed: int
    index: int
    source: str
    A: type
    B: type
    Out: type

    @property
    def name(self) -> str:
        """The spec name (unique per seed and index)."""
        return f"fuzz_{self.seed}_{self.index}"

    def write(self, directory: str) -> str:
        """Write the module to ``directory``; returns its path."""
        path = os.path.join(directory, f"{self.name}.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.source)
        return path

    def load(self, directory: str) -> FunctionType:
        """Write and import the module; returns its ``kern`` function."""
        path = self.write(directory)
        spec = importlib.util.spec_from_file_location(self.name, path)
        assert spec is not None and spec.loader is not None
        module: ModuleType = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.kern  # type: ignore[no-any-return]


class _Gen:
    """Random expressions and statements over the names in scope."""

    def __init__(self, rng: random.Random, types: Sequence[type]) -> None:
        self.rng = rng
        self.types = [short_name(t) for t in types]
        self.consts: list[str] = []

    def pick(self, seq: Sequence[str]) -> str:
        return seq[self.rng.randrange(len(seq))]

    def strong_const(self) -> str:
        t = self.pick(self.types)
        if t == "bool":
            value = self.pick(("True", "False"))
        elif t.startswith("f"):
            value = self.pick(("0.0", "-0.0", "1.5", "-3.0", "1e-40", "1e38", "65504.0",
                               "float('inf')", "float('nan')", "5e-324"))
        else:
            info = np.iinfo(getattr(np, {"i": "int", "u": "uint"}[t[0]] + t[1:]))
            value = str(self.pick((0, 1, 3, int(info.min), int(info.max), int(info.max) // 3)))
        name = f"K{len(self.consts)}"
        self.consts.append(f"{name} = {_ctor(t)}({value})")
        return name

    def leaf(self, names: Sequence[str]) -> str:
        r = self.rng.random()
        if r < 0.55 and names:
            return self.pick(names)
        if r < 0.72:
            return self.pick(_INT_LITERALS[:7] if self.rng.random() < 0.75 else _INT_LITERALS)
        if r < 0.86:
            return self.pick(_FLOAT_LITERALS)
        if r < 0.9:
            return self.pick(("True", "False"))
        return self.strong_const()

    def expr(self, names: Sequence[str], depth: int, helpers: Sequence[str] = ()) -> str:
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf(names)
        d = depth - 1
        r = self.rng.random()
        sub = lambda: self.expr(names, d, helpers)  # noqa: E731
        if r < 0.20:
            return f"({sub()} {self.pick(_ARITH)} {sub()})"
        if r < 0.30:
            # mostly integer operands, so that most bitwise expressions type-check
            return f"({self.integer(sub())} {self.pick(_BITWISE)} {self.integer(sub())})"
        if r < 0.36:
            return f"({sub()} ** {self.pick(('0', '1', '2', '3', '0.5', '-1.0', '2.0'))})"
        if r < 0.46:
            ops = [self.pick(_CMPOPS) for _ in range(self.rng.choice((1, 1, 2)))]
            parts = [sub()]
            for op in ops:
                parts += [op, sub()]
            return "(" + " ".join(parts) + ")"
        if r < 0.50:
            return f"({self.pick(('-', '~', 'not ', '+'))}{sub()})"
        if r < 0.54:
            return f"(({sub()} {self.pick(_CMPOPS)} {sub()}) {self.pick(('and', 'or'))} " \
                   f"({sub()} {self.pick(_CMPOPS)} {sub()}))"
        if r < 0.64:
            return f"({sub()} if {sub()} else {sub()})"
        if r < 0.72:
            args = ", ".join(sub() for _ in range(self.rng.choice((2, 2, 3))))
            return f"{self.pick(('min', 'max'))}({args})"
        if r < 0.75:
            return f"abs({sub()})"
        if r < 0.84:
            return f"{_ctor(self.pick(self.types))}({sub()})"
        if r < 0.88:
            narrow = self.pick([t for t in ("i8", "i16", "u8", "u16", "bool")])
            return f"int({_ctor(narrow)}({sub()}))"
        if r < 0.90:
            return f"float({sub()})"
        if r < 0.92:
            return f"bool({sub()})"
        if r < 0.95:
            return f"g.math.{self.pick(_EXACT_MATH)}({sub()})"
        if r < 0.97:
            return f"g.math.{self.pick(_EXACT_MATH2)}({sub()}, {sub()})"
        if helpers:
            return f"{self.pick(helpers)}({sub()}, {sub()})"
        return f"g.math.isnan({sub()})"

    def integer(self, text: str) -> str:
        """``text``, usually converted to a random integer type first."""
        ints = [t for t in self.types if t[0] in "iu"]
        if self.rng.random() < 0.2 or not ints:
            return text
        return f"{_ctor(self.pick(ints))}({text})"

    def cast(self, text: str) -> tuple[str, str]:
        t = self.pick(self.types)
        return t, f"{_ctor(t)}({text})"


def generate(seed: int, index: int, types: Sequence[type]) -> FuzzCase:
    """The ``index``-th kernel of ``seed`` over scalar ``types`` (a pure function)."""
    rng = random.Random(zlib.crc32(f"{seed}/{index}".encode()))
    gen = _Gen(rng, types)
    A, B, Out = (rng.choice(list(types)) for _ in range(3))
    helpers: list[str] = []
    helper_src: list[str] = []
    for h in range(rng.choice((0, 0, 1, 2))):
        name = f"h{h}"
        body = gen.expr(["u", "w"], 3, helpers)
        _, value = gen.cast(body)
        helper_src.append(f"def {name}(u, w):\n    return {value}\n")
        helpers.append(name)
    lines: list[str] = []
    names = ["a", "b"]
    if rng.random() < 0.3:
        names.append("KW")
        gen.consts.append(f"KW = {gen.pick(_INT_LITERALS + _FLOAT_LITERALS)}")
    locals_: list[str] = []
    local_types: dict[str, str] = {}

    def statements(indent: str, budget: int, loop_var: str | None) -> None:
        for _ in range(budget):
            r = rng.random()
            scope = names + locals_ + ([loop_var] if loop_var else [])
            if r < 0.4 or not locals_:
                var = f"v{len(locals_)}" if (not locals_ or rng.random() < 0.6) else rng.choice(
                    locals_)
                if var not in locals_:
                    if indent != "    ":
                        continue  # a new local only at the top level: always assigned
                    local_types[var], value = gen.cast(gen.expr(scope, 3, helpers))
                    locals_.append(var)
                    lines.append(f"{indent}{var} = {value}")
                else:
                    value = gen.expr(scope, 3, helpers)
                    lines.append(f"{indent}{var} = {_ctor(local_types[var])}({value})")
            elif r < 0.55:
                lines.append(f"{indent}if {gen.expr(scope, 2, helpers)}:")
                lines.append(f"{indent}    return {gen.expr(scope, 3, helpers)}")
            elif r < 0.7 and len(indent) < 12:
                lines.append(f"{indent}if {gen.expr(scope, 2, helpers)}:")
                n = len(lines)
                statements(indent + "    ", 1, loop_var)
                if len(lines) == n:
                    lines.append(f"{indent}    pass")
                lines.append(f"{indent}else:")
                n = len(lines)
                statements(indent + "    ", 1, loop_var)
                if len(lines) == n:
                    lines.append(f"{indent}    pass")
            elif r < 0.85 and len(indent) < 12:
                var = f"i{len(indent)}"
                bounds = rng.choice(("3", "0", "1, 4", "5, -1, -2", "-2, 2"))
                lines.append(f"{indent}for {var} in range({bounds}):")
                n = len(lines)
                statements(indent + "    ", 2, var)
                if len(lines) == n:
                    lines.append(f"{indent}    pass")
            elif len(indent) < 12:
                var = f"k{len(indent)}"
                lines.append(f"{indent}{var} = 0")
                lines.append(f"{indent}while {var} < {rng.choice((1, 2, 3))}:")
                lines.append(f"{indent}    {var} = {var} + 1")
                n = len(lines)
                statements(indent + "    ", 1, loop_var)
                if rng.random() < 0.3:
                    lines.append(f"{indent}    if {gen.expr(scope, 2, helpers)}:")
                    lines.append(f"{indent}        {rng.choice(('break', 'continue'))}")
                if len(lines) == n:
                    lines.append(f"{indent}    pass")

    statements("    ", rng.choice((0, 1, 2, 3, 4)), None)
    result = gen.expr(names + locals_, 4, helpers)
    if Out in ULPS and rng.random() < 0.1:
        result = f"g.math.{gen.pick(TRANSCENDENTAL)}({result})"
    lines.append(f"    return {result}")
    source = "\n".join([
        f"# gompute fuzz kernel: seed {seed}, index {index}",
        "import numpy as np",
        "import gompute_core as g",
        "",
        *gen.consts,
        "",
        *helper_src,
        "",
        "def kern(a, b):",
        *lines,
        "",
    ])
    return FuzzCase(seed, index, source, A, B, Out)
