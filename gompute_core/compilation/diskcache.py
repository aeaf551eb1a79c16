"""The compile cache's location, its safety checks, and the GPU backends' artifact cache.

Everything lives under ``$GOMPUTE_CACHE_DIR`` (default ``~/.cache/gompute``),
in a folder per backend. Every folder Gompute creates there is mode 0700, and
every folder it reads from must belong to this user and be writable by no one
else (as ssh and pip require of their own files): anyone who can write a
compile cache can make its users run their code. A folder that fails the check
raises :class:`~gompute_core.errors.CacheUnsafe` naming it and the fix; nothing
is read from it. A location that cannot be created or written (a read-only
disk, a path under a regular file) is not an error: the backend compiles in
memory and says so once per process with a :class:`GomputeWarning`.

:class:`DiskCache` (CUDA, HIP) keeps one file per key. The key is the sha256 of
its parts, which name the backend, the compiler and its version, the target
arch, the options, the sha256 of the rendered source and the KernelIR digest
(:func:`gompute_core.backend.compiler.cache_key`), so a change in any of them
misses. A file is a one-line JSON header (the artifact's fields, the
payload's sha256 and the lengths of the image and source) followed by the image
and the source bytes. Writes go to a temporary file in the same folder, then
``os.replace``: readers never see half a file. Reads check the sha256 before
returning; a file that fails the check or does not parse is deleted with one
``GomputeWarning`` and counts as a miss, so the caller rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from ..backend.storage import (
    cache_root,
    private_cache_dir,
    warn_dropped,
    write_atomically,
)
from ..plugins.records import Artifact

FORMAT_VERSION = 1


class DiskCache:
    """Artifacts of one backend (``namespace``) keyed by a sequence of strings."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    @property
    def directory(self) -> Path:
        """The namespace's folder (read from the environment on each use)."""
        return cache_root() / self.namespace

    def path_for(self, key_parts: Sequence[str]) -> Path:
        """The file that holds (or would hold) the artifact of ``key_parts``."""
        text = "\0".join([f"gompute-cache/{FORMAT_VERSION}", *map(str, key_parts)])
        return self.directory / (hashlib.sha256(text.encode()).hexdigest() + ".gca")

    def get(self, key_parts: Sequence[str]) -> Artifact | None:
        """The cached artifact, or None: missing, or failing its checksum (then deleted, with
        one warning), or the location is unusable (one warning per process)."""
        if private_cache_dir(self.namespace) is None:
            return None
        path = self.path_for(key_parts)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            newline = data.index(b"\n")
            head = json.loads(data[:newline])
            payload = data[newline + 1:]
            if hashlib.sha256(payload).hexdigest() != head["sha256"]:
                raise ValueError("checksum mismatch")
            n_image = head["image_len"]
            if len(payload) != n_image + head["source_len"]:
                raise ValueError("length mismatch")
            return Artifact(
                backend=head["backend"], image=payload[:n_image], format=head["format"],
                entry=head["entry"], target=head["target"],
                source=payload[n_image:].decode(), compiler=head["compiler"],
                digest=head["digest"], kind=head["kind"],
                extra=tuple((str(k), str(v)) for k, v in head["extra"]),
            )
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            path.unlink(missing_ok=True)
            warn_dropped(path, f"{type(exc).__name__}: {exc}")
            return None

    def put(self, key_parts: Sequence[str], artifact: Artifact) -> Path | None:
        """Store ``artifact`` atomically (mode 0600); returns its path, or None when the
        location is unusable (the cache is an optimisation: failing to write is not an
        error)."""
        source = artifact.source.encode()
        payload = artifact.image + source
        head = {
            "backend": artifact.backend, "format": artifact.format, "entry": artifact.entry,
            "target": artifact.target, "compiler": artifact.compiler,
            "digest": artifact.digest, "kind": artifact.kind,
            "extra": [list(p) for p in artifact.extra],
            "image_len": len(artifact.image), "source_len": len(source),
            "sha256": hashlib.sha256(payload).hexdigest(),
        }
        if private_cache_dir(self.namespace) is None:
            return None
        path = self.path_for(key_parts)
        try:
            write_atomically(path, json.dumps(head).encode() + b"\n" + payload)
        except OSError:
            return None
        return path


MEMORY_ENTRIES = 256
"""Artifacts a :class:`CompileCache` keeps in memory, the least recently used dropped
first (a live kernel holds its own program; a dropped artifact is read from disk, or
rebuilt, when it is asked for again)."""


class CompileCache:
    """Two levels for a compiler: this process's memory (the :data:`MEMORY_ENTRIES` most
    recently used artifacts), then a :class:`DiskCache`.

    The core's :func:`~gompute_core.backend.compiler.compile_kernel` calls
    :meth:`get_or_build` with the key and a function that compiles; the
    function runs only when neither level has the artifact.
    """

    def __init__(self, namespace: str) -> None:
        self.disk = DiskCache(namespace)
        self._memory: OrderedDict[tuple[str, ...], Artifact] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key_parts: Sequence[str], build: Callable[[], Artifact],
                     disk: bool = True) -> Artifact:
        """The artifact of ``key_parts``, from memory, disk (unless ``disk`` is False), or
        ``build()`` (then stored)."""
        key = tuple(map(str, key_parts))
        with self._lock:
            hit = self._memory.get(key)
            if hit is not None:
                self._memory.move_to_end(key)
                return hit
        artifact = self.disk.get(key) if disk else None
        if artifact is None:
            artifact = build()
            if disk:
                self.disk.put(key, artifact)
        with self._lock:
            self._memory[key] = artifact
            while len(self._memory) > MEMORY_ENTRIES:
                self._memory.popitem(last=False)
        return artifact

    def forget_memory(self) -> None:
        """Drop the in-memory level (the next lookup reads the disk)."""
        with self._lock:
            self._memory.clear()
