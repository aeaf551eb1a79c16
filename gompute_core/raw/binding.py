"""A raw kernel's argument binder: the checks of every launch as one straight-line function.

:class:`~gompute_core.raw.launch.RawKernel` checks each argument against the
kernel's signature (:meth:`RawKernel._converter`). On a launch loop those checks are
most of the host's cost, so for a backend that takes its arguments packed
(``Device.packs_arguments``) the kernel gets, once, a function written for its
signature, in the way :mod:`dataclasses` writes ``__init__``: for each argument one
test that accepts the common, already-right value outright (a buffer of this device,
of the declared element type, not freed, and not read-only where the kernel writes it; a
NumPy scalar of exactly the declared type;
a Python int the declared integer type holds) and hands anything else to that
argument's full converter, which returns the checked value or raises the same
``InvalidArgument`` as ever. Nothing is skipped: the fast test
is the converter's own acceptance condition, written inline.

The generated source is kept on the binder (``binder.source``) for anyone reading a
traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..abi.entry_args import ArgBuffer
from ..types import is_int


class PackedBinder:
    """``binder.bind(args)`` checks ``args`` (a sequence of the signature's length) and packs
    them into the argument buffer (``InvalidArgument`` names a wrong one); :attr:`source`
    is that function's text."""

    def __init__(self, slot_kinds: Sequence[str], converters: Sequence[Callable[[Any], Any]],
                 dtypes: Sequence[Any], device: Any, args: ArgBuffer,
                 check_bounds: Callable[[list[Any]], None] | None) -> None:
        names = [f"a{k}" for k in range(len(slot_kinds))]
        # Buffer subclasses met so far: the fast test's ``isinstance(a, Buffer)`` without the
        # ABC's cost (filled by the slow path, whose converters only ever return Buffers)
        known: set[type] = set()
        env: dict[str, Any] = {"dev": device, "data": args.data, "pack_into": args.pack_into,
                               "set_params": args.set_params, "check_bounds": check_bounds,
                               "known": known}
        lines = ["def bind(args):"]
        if names:
            lines.append(f"    ({', '.join(names)},) = args")
        packed, params = [], None
        for k, (kind, conv, dtype) in enumerate(zip(slot_kinds, converters, dtypes,
                                                    strict=True)):
            a = names[k]
            env[f"conv{k}"], env[f"t{k}"] = conv, dtype
            if kind in ("pointer", "written"):  # written: read-only memory is refused
                ro = f" and not {a}.readonly" if kind == "written" else ""
                lines += [f"    if not ({a}.__class__ in known and {a}.device is dev and "
                          f"{a}.dtype is t{k} and not {a}._freed{ro}):",
                          f"        {a} = conv{k}({a})",
                          f"        known.add({a}.__class__)"]
                packed.append(f"{a}.addr")
            elif kind == "scalar":
                # a Python int in range packs exactly as the NumPy scalar would; a float is
                # converted (NumPy's float32 overflows to inf where ``struct`` would raise)
                fits = ""
                if is_int(dtype) and dtype is not np.bool_:
                    info = np.iinfo(dtype)
                    fits = f" and not ({a}.__class__ is int and {info.min} <= {a} <= {info.max})"
                lines += [f"    if {a}.__class__ is not t{k}{fits}:",
                          f"        {a} = conv{k}({a})"]
                packed.append(a)
            else:
                lines.append(f"    {a} = conv{k}({a})")
                params = a
        if check_bounds is not None:
            lines.append(f"    check_bounds([{', '.join(names)}])")
        lines.append(f"    pack_into(data, 0{''.join(', ' + p for p in packed)})")
        if params is not None:
            lines.append(f"    set_params({params})")
        self.source = "\n".join(lines) + "\n"
        namespace: dict[str, Any] = {}
        exec(compile(self.source, "<gompute raw-kernel binder>", "exec"), env,  # noqa: S102
             namespace)
        self.bind: Callable[[Sequence[Any]], None] = namespace["bind"]

