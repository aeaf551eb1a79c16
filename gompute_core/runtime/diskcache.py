"""On-disk compile cache shared by the GPU backends (CUDA, HIP).

One file per key under ``$GOMPUTE_CACHE_DIR`` (default ``~/.cache/gompute``),
in a folder per namespace. The key is the sha256 of its parts, which name the
compiler, its version, the target arch, the options and the KernelIR digest
(plus the renderer's version), so a change in any of them misses.

A file is a one-line JSON header (the artifact's fields, the payload's sha256
and the lengths of the image and source) followed by the image and the source
bytes. Writes go to a temporary file in the same folder, then ``os.replace``:
readers never see half a file. Reads check the sha256 before returning; a file
that fails the check or does not parse is deleted and counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ..plugins.records import Artifact

ENV_CACHE_DIR = "GOMPUTE_CACHE_DIR"
FORMAT_VERSION = 1


def cache_root() -> Path:
    """``$GOMPUTE_CACHE_DIR`` or ``~/.cache/gompute``."""
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env) if env else Path.home() / ".cache" / "gompute"


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
        """The cached artifact, or None (missing, unreadable or failing its checksum)."""
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
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            path.unlink(missing_ok=True)
            return None

    def put(self, key_parts: Sequence[str], artifact: Artifact) -> Path | None:
        """Store ``artifact`` atomically; returns its path, or None when the folder is not
        writable (the cache is an optimisation: failing to write is not an error)."""
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
        path = self.path_for(key_parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".gca")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(json.dumps(head).encode() + b"\n" + payload)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return None
        return path


class CompileCache:
    """Two levels for a compiler: this process's memory, then a :class:`DiskCache`.

    Backends call :meth:`get_or_build` with their key (compiler, version,
    arch, options, IR digest, ...) and a function that renders and compiles;
    the function runs only when neither level has the artifact.
    """

    def __init__(self, namespace: str) -> None:
        self.disk = DiskCache(namespace)
        self._memory: dict[tuple[str, ...], Artifact] = {}
        self._lock = threading.Lock()

    def get_or_build(self, key_parts: Sequence[str], build: Callable[[], Artifact],
                     disk: bool = True) -> Artifact:
        """The artifact of ``key_parts``, from memory, disk (unless ``disk`` is False), or
        ``build()`` (then stored)."""
        key = tuple(map(str, key_parts))
        with self._lock:
            hit = self._memory.get(key)
        if hit is not None:
            return hit
        artifact = self.disk.get(key) if disk else None
        if artifact is None:
            artifact = build()
            if disk:
                self.disk.put(key, artifact)
        with self._lock:
            self._memory[key] = artifact
        return artifact

    def forget_memory(self) -> None:
        """Drop the in-memory level (the next lookup reads the disk)."""
        with self._lock:
            self._memory.clear()
