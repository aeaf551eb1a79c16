"""Ahead-of-time compilation: ``g.compile`` and the prebuilt-artifact directory.

``gompute build`` writes, for every spec, ``<name>.<backend>.<target>.json``
(the manifest), the image ``<name>.<backend>.<target>.bin`` and the rendered
source ``<name>.<backend>.<target>.src`` into one directory. A ``Kernel``
looks there first (its ``artifact_dir=`` argument, else
``$GOMPUTE_ARTIFACT_DIR``) so a deployment never compiles at run time. A
manifest whose IR digest differs from the spec's current one is stale: it is
ignored with a ``GomputeWarning``; an image whose sha256 does not match its
manifest is refused the same way, and so is one built with other compiler
options than the kernel asks for (the manifest records them).

A raw kernel compiled with ``checked=True`` is its instrumented IR (bounds checks only:
race and barrier tracking need to know the device runs a block's threads one at a time,
which a build without a device cannot), written as ``<name>.checked.<backend>.<target>.*``
with a manifest whose ``checked`` entry holds the checked entry's arguments and the fault
sites. A loader says which one it wants, and refuses a manifest whose ``checked`` flag
is not the one its file name promises: checked code never runs with unchecked arguments.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..compilation import compile_artifact
from ..errors import BackendUnavailable, GomputeWarning, InvalidArgument, Unsupported
from ..ir.checked import FaultRecord, Instrumented, Site, instrument
from ..ir.kernel import RAW, KernelIR
from ..ir.nodes import Function, IRType, PointerType, StructType
from ..plugins import manager
from ..plugins.records import Artifact, CompileRequest
from ..types import as_scalar_type, short_name

if TYPE_CHECKING:
    from ..specs import Spec

ENV_ARTIFACT_DIR = "GOMPUTE_ARTIFACT_DIR"
MANIFEST_VERSION = 1


def compile(spec: Spec, backend: str, arch: str | None = None,
            options: Iterable[str] = (), *, contract: bool = False,
            checked: bool = False) -> Artifact:
    """Compile ``spec`` (or a raw kernel) for ``backend`` and ``arch`` through the plugin
    (no device needed when ``arch`` is given; ``None`` means the detected device's arch).
    ``options`` are extra compiler options, ``contract=True`` allows floating-point
    contraction (see :func:`contracted`); both are part of the cache key.
    ``checked=True`` compiles a raw kernel written in Python in checked mode, bounds
    checks only (see the module docstring); :func:`build` also returns what
    :func:`write_artifact` needs to write it."""
    return build(spec, backend, arch, options, contract=contract, checked=checked).artifact


@dataclasses.dataclass(frozen=True)
class Built:
    """What :func:`build` compiled: the ``artifact``, and for a checked raw kernel its
    instrumented IR and fault sites (``checked``; None unchecked)."""

    artifact: Artifact
    checked: Instrumented | None


def build(spec: Spec, backend: str, arch: str | None = None, options: Iterable[str] = (),
          *, contract: bool = False, checked: bool = False) -> Built:
    """:func:`compile`'s work, keeping the instrumented kernel of a checked build."""
    from ..raw.kernel import RawKernelDef
    from ..specs import Spec

    if not isinstance(spec, (Spec, RawKernelDef)):
        raise InvalidArgument(f"g.compile: spec must be a Spec or a raw kernel, got {spec!r}")
    opts = compile_options(options, "g.compile")
    if not isinstance(checked, bool):
        raise InvalidArgument(f"g.compile: checked must be True or False, got {checked!r}")
    if isinstance(spec, Spec) and "entries" not in spec.kind_object.needs:
        raise Unsupported(f"g.compile: {spec.name!r} is a {spec.kind}, whose device program "
                          "is raw kernels the core generates when a Kernel opens it; there is "
                          "no entry point of its own to compile ahead of time")
    kir = contracted(spec.lower(), contract, "g.compile")
    instrumented = None
    if checked:
        if isinstance(spec, Spec):
            raise Unsupported(f"g.compile: spec {spec.name!r} ({spec.kind}): checked=True "
                              "compiles raw kernels written in Python; a spec runs checked as "
                              "raw kernels the core writes when g.Kernel(..., checked=True) "
                              "opens it")
        if spec.source is not None:
            raise Unsupported(f"g.compile: raw kernel {spec.name!r} is C source; checked=True "
                              "instruments raw kernels written in Python")
        instrumented = instrument(kir)
        kir = instrumented.kernel
    if arch is None:
        arch = detected_arch(backend)
    request = CompileRequest(backend=backend, kernel=kir, arch=arch, options=opts,
                             source=getattr(spec, "source", None))
    return Built(compile_artifact(request), instrumented)


def compile_options(options: object, where: str) -> tuple[str, ...]:
    """``options`` checked as a sequence of compiler options (non-empty strings), in order;
    ``InvalidArgument`` naming ``where`` otherwise."""
    if isinstance(options, (str, bytes)):
        raise InvalidArgument(f"{where}: options must be a sequence of strings, not a string "
                              f"(write options=[{options!r}])")
    try:
        opts = tuple(options)  # type: ignore[call-overload]
    except TypeError:
        raise InvalidArgument(f"{where}: options must be a sequence of strings, got "
                              f"{options!r}") from None
    for o in opts:
        if not isinstance(o, str) or not o:
            raise InvalidArgument(f"{where}: option {o!r} is not a non-empty string")
    return opts


def check_contract(contract: object, where: str) -> bool:
    """``contract`` checked to be a bool (``InvalidArgument`` naming ``where``)."""
    if not isinstance(contract, bool):
        raise InvalidArgument(f"{where}: contract must be True or False, got {contract!r}")
    return contract


def contracted(kir: KernelIR, contract: object, where: str) -> KernelIR:
    """``kir`` as compiled with ``contract``: ``True`` lets the compiler fuse ``a * b + c``
    into one fused multiply-add (results may then differ between backends and from the
    oracle); ``False`` (the default) keeps one rounding per operation."""
    return dataclasses.replace(kir, contract=True) if check_contract(contract, where) else kir


def detected_arch(backend: str) -> str:
    """The arch of ``backend``'s device 0, for a compile that names none (once, here, so
    no plugin re-implements detection); ``BackendUnavailable`` when there is no device."""
    avail = manager.probe(backend)
    if not avail.available or not avail.devices:
        example = manager.require(backend).info.example_arch  # type: ignore[union-attr]
        hint = f"arch={example!r}" if example else "arch=..."
        raise BackendUnavailable(f"g.compile: no arch given and no {backend} device to detect "
                                 f"one from ({avail.reason or 'no device'}); pass {hint}")
    return avail.devices[0].arch


def _stem(name: str, backend: str, target: str, checked: bool = False) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in target)
    return f"{name}.checked.{backend}.{safe}" if checked else f"{name}.{backend}.{safe}"


def write_artifact(directory: str | os.PathLike[str], artifact: Artifact,
                   kir: KernelIR, options: tuple[str, ...] = (),
                   checked: Instrumented | None = None) -> Path:
    """Write ``artifact`` (compiled from ``kir`` with the extra compiler ``options``; from
    ``checked.kernel``, ``kir`` instrumented, for a checked build: :attr:`Built.checked`)
    and its manifest; return the manifest path."""
    name = kir.name
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    stem = _stem(name, artifact.backend, artifact.target, checked is not None)
    compiled = kir if checked is None else checked.kernel
    manifest = {
        "manifest_version": MANIFEST_VERSION, "name": name, "backend": artifact.backend,
        "format": artifact.format, "entry": artifact.entry, "target": artifact.target,
        "compiler": artifact.compiler, "digest": compiled.digest(), "kind": artifact.kind,
        "image": f"{stem}.bin", "source": f"{stem}.src",
        "image_sha256": hashlib.sha256(artifact.image).hexdigest(),
        "extra": [list(pair) for pair in artifact.extra],
        "options": list(options), "contract": kir.contract,
        "checked": None if checked is None else {
            "args": [[n, _type_text(t)] for n, t in checked.kernel.functions[-1].args],
            "sites": [[s.access, s.array, s.where, None if s.shape is None else list(s.shape)]
                      for s in checked.sites]},
    }
    if kir.kind == RAW:
        manifest["raw"] = {"signature": [[n, _type_text(t)] for n, t in
                                         _raw_signature(kir)],
                           "block": None if kir.block is None else list(kir.block)}
    for filename, data in ((f"{stem}.bin", artifact.image),
                           (f"{stem}.src", artifact.source.encode()),
                           (f"{stem}.json", json.dumps(manifest, indent=2).encode())):
        tmp = out / f".{filename}.tmp{os.getpid()}"
        tmp.write_bytes(data)
        os.replace(tmp, out / filename)
    return out / f"{stem}.json"


def _built_as_asked(manifest: dict[str, object], path: Path, options: tuple[str, ...],
                    contract: bool) -> bool:
    """True when the manifest at ``path`` was built with ``options`` and ``contract``; else
    a warning saying how it differs."""
    built = (list(manifest.get("options", [])), bool(manifest.get("contract", False)))  # type: ignore[call-overload]
    if built == (list(options), contract):
        return True
    warnings.warn(f"prebuilt artifact {path} was built with options {built[0]} and "
                  f"contract={built[1]}, not the options {list(options)} and "
                  f"contract={contract} asked for; not using it", GomputeWarning, stacklevel=4)
    return False


def _checked_as_named(manifest: dict[str, object], path: Path, checked: bool) -> None:
    """Refuse (``InvalidArgument`` naming the file) a manifest whose ``checked`` entry is
    not what its file name says: a checked image takes more arguments than the kernel's
    signature, and must never be launched without them."""
    if (manifest.get("checked") is not None) != checked:
        raise InvalidArgument(
            f"prebuilt artifact {path}: its manifest says it was built "
            f"{'checked' if manifest.get('checked') is not None else 'unchecked'}, but its "
            f"file name says {'checked' if checked else 'unchecked'}; rebuild it")


def find_prebuilt(kir: KernelIR, backend: str, arch: str,
                  artifact_dir: str | os.PathLike[str] | None = None,
                  options: tuple[str, ...] = (), checked: bool = False) -> Artifact | None:
    """The prebuilt artifact of ``kir`` for ``backend``/``arch`` built with the extra compiler
    ``options``, or None; ``checked``: ``kir`` is a checked raw kernel's instrumented IR,
    looked up among checked artifacts (whose manifest must say so).

    Looks in ``artifact_dir``, else ``$GOMPUTE_ARTIFACT_DIR``; None when
    neither is set or no manifest matches. Stale or corrupt entries, and entries built
    with other options, warn and give None (the caller compiles).
    """
    directory = artifact_dir if artifact_dir is not None else os.environ.get(ENV_ARTIFACT_DIR)
    if not directory:
        return None
    path = Path(directory) / f"{_stem(kir.name, backend, arch, checked)}.json"
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
        image = (path.parent / manifest["image"]).read_bytes()
        source_path = path.parent / manifest["source"]
        source = source_path.read_text() if source_path.is_file() else ""
    except (OSError, ValueError, KeyError) as exc:
        warnings.warn(f"prebuilt artifact {path} is unreadable ({exc}); compiling instead",
                      GomputeWarning, stacklevel=3)
        return None
    _checked_as_named(manifest, path, checked)
    if manifest.get("digest") != kir.digest():
        why = " (or for a device whose block threads run in parallel: built ahead of time, " \
              "a checked kernel tracks no races)" if checked else ""
        warnings.warn(f"prebuilt artifact {path} was built from another version of kernel "
                      f"{kir.name!r} (IR digest differs{why}); compiling instead. Re-run "
                      "`gompute build`.", GomputeWarning, stacklevel=3)
        return None
    if not _built_as_asked(manifest, path, options, kir.contract):
        return None
    if hashlib.sha256(image).hexdigest() != manifest.get("image_sha256"):
        warnings.warn(f"prebuilt artifact {path}: image checksum mismatch; compiling instead",
                      GomputeWarning, stacklevel=3)
        return None
    return Artifact(
        backend=backend, image=image, format=manifest["format"], entry=manifest["entry"],
        target=manifest["target"], source=source, compiler=manifest.get("compiler", ""),
        digest=manifest["digest"], kind=manifest.get("kind", ""),
        extra=tuple((str(k), str(v)) for k, v in manifest.get("extra", [])),
    )


def _raw_signature(kir: KernelIR) -> tuple[tuple[str, IRType], ...]:
    """A raw kernel's parameters: its registered definition's (from_source kernels have no
    IR function), else the entry function's."""
    from ..specs import registered_kernel

    definition = registered_kernel(kir.name)
    if definition is not None and getattr(definition, "signature", None) is not None:
        return definition.signature  # type: ignore[no-any-return]
    return kir.functions[-1].args


def _type_text(t: IRType) -> str:
    if isinstance(t, PointerType):
        return f"ptr:{short_name(t.elem)}"
    if isinstance(t, StructType):
        return f"params:{t.name}"
    return short_name(t)


def _type_of_text(text: str, name: str) -> IRType:
    from .. import types as gtypes

    if text.startswith("params:"):
        raise InvalidArgument(f"prebuilt raw kernel {name!r} takes a params record "
                              f"({text[7:]}); import the module that defines it to load it")
    elem = text.removeprefix("ptr:")
    t = as_scalar_type(getattr(gtypes, elem, None))
    if t is None:
        raise InvalidArgument(f"prebuilt raw kernel {name!r}: unknown type {text!r} in its "
                              "manifest")
    return PointerType(t) if text.startswith("ptr:") else t


@dataclasses.dataclass(frozen=True)
class PrebuiltRaw:
    """A raw kernel loaded by name from its manifest: the ``artifact``, a KernelIR naming
    its entry and block and declaring its entry's arguments (``slots``: the ``signature``,
    then a checked build's extents and fault record), and a checked build's fault
    ``sites`` (None unchecked)."""

    artifact: Artifact
    kernel: KernelIR
    signature: tuple[tuple[str, IRType], ...]
    slots: tuple[tuple[str, IRType], ...]
    sites: tuple[Site, ...] | None


def find_prebuilt_raw(name: str, backend: str, arch: str,
                      artifact_dir: str | os.PathLike[str] | None = None,
                      options: tuple[str, ...] = (), contract: bool = False,
                      checked: bool = False) -> PrebuiltRaw | None:
    """A prebuilt raw kernel by name alone (no definition in this process, no compiler),
    its checked build with ``checked``; None when there is none, or when it was built with
    other ``options`` or ``contract`` (a warning says so). The image's checksum is
    verified; a manifest whose ``checked`` entry contradicts its file name is refused."""
    directory = artifact_dir if artifact_dir is not None else os.environ.get(ENV_ARTIFACT_DIR)
    if not directory:
        return None
    path = Path(directory) / f"{_stem(name, backend, arch, checked)}.json"
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
        raw = manifest["raw"]
        image = (path.parent / manifest["image"]).read_bytes()
    except (OSError, ValueError, KeyError) as exc:
        warnings.warn(f"prebuilt artifact {path} is unreadable or not a raw kernel ({exc})",
                      GomputeWarning, stacklevel=3)
        return None
    _checked_as_named(manifest, path, checked)
    if hashlib.sha256(image).hexdigest() != manifest.get("image_sha256"):
        warnings.warn(f"prebuilt artifact {path}: image checksum mismatch; not loaded",
                      GomputeWarning, stacklevel=3)
        return None
    if not _built_as_asked(manifest, path, options, contract):
        return None
    signature = tuple((str(n), _type_of_text(str(t), name)) for n, t in raw["signature"])
    slots, sites = signature, None
    if checked:
        *user, (record, _) = ((str(n), _type_of_text(str(t), name))
                              for n, t in manifest["checked"]["args"])
        slots = (*user, (record, FaultRecord(np.uint64)))
        sites = tuple(Site(str(a), str(arr), str(w), None if sh is None else tuple(sh))
                      for a, arr, w, sh in manifest["checked"]["sites"])
    block = None if raw["block"] is None else tuple(int(b) for b in raw["block"])
    entry = Function(name=name, args=slots, ret=None, locals=(), body=())
    kir = KernelIR(name=name, kind=RAW, block_size=0 if block is None else
                   block[0] * block[1] * block[2], value_types=(), params=None,
                   functions=(entry,), element=name, block=block,  # type: ignore[arg-type]
                   contract=contract)
    source_path = path.parent / manifest["source"]
    artifact = Artifact(
        backend=backend, image=image, format=manifest["format"], entry=manifest["entry"],
        target=manifest["target"],
        source=source_path.read_text() if source_path.is_file() else "",
        compiler=manifest.get("compiler", ""), digest=manifest["digest"], kind=RAW,
        extra=tuple((str(k), str(v)) for k, v in manifest.get("extra", [])))
    return PrebuiltRaw(artifact, kir, signature, slots, sites)
