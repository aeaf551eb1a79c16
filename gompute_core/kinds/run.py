"""``Kernel.run``'s device work, once for every backend: thread-safe, pipelined on GPUs.

Three ways, chosen per call from what the device declares:

* **host memory** (a device with the capability ``"host_memory"``: the CPU, the
  reference backend): the launch gets the caller's (already validated) arrays;
  nothing is copied. A launcher that calls a host function on typed arrays
  (``packs_arguments = False``) gets the arrays themselves; a packing one gets
  the addresses of buffers the device borrows over them (``Device.borrow``), and
  ``run`` waits for the launch before the borrowed buffers are dropped.
* **pipelined** (a device with ``"streams"`` whose ``pin`` page-locks the
  caller's arrays): the arrays are cut into chunks of 1-8 MiB; each chunk's
  upload, launch and download go on one of two streams in turn, so the
  upload of one chunk, the kernel of another and the download of a third run
  at once (PCIe is full duplex). Elementwise kinds and gather (over
  ``idx``/``out``, after ``src``) are pipelined; scatter and ``map_indexed``
  (whose index is global) are not, nor is reduce: its upload is the whole cost
  (the download is its partials), so chunks only add launches and waits (on an
  H100, one piece took 146 us at 2**20 f32 against 165 in chunks, 1,303 against
  1,321 at 2**24).
* **staged**: inputs go through a pinned staging buffer in one piece each.
* **in place** (arrays already on the device: CuPy, torch, ... see
  :mod:`gompute_core.kinds.foreign`): no copy; the launch is ordered after
  each producer's stream and that stream after the launch (the stream is
  synchronized when a producer named none); a reduce downloads only its
  partials.

Every call takes its own scratch set (device buffers, staging, streams) from
a pool, so threads sharing one ``Kernel`` never share buffers; a single
thread reuses one set.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from .foreign import DeviceArray, order_after, order_before

if TYPE_CHECKING:
    from ..backend.buffer import Buffer
    from ..backend.device import Stream
    from ..specs import Spec
    from .program import KernelProgram

PIPELINE_MIN_BYTES = 2 << 20
"""Smaller transfers go in one piece: below this, chunking costs more than it overlaps."""
CHUNK_MIN_BYTES, CHUNK_MAX_BYTES = 1 << 20, 8 << 20
CHUNK_ALIGN = 4096
"""Chunk lengths are multiples of this many elements, so chunk addresses keep the 16-byte
alignment the vectorized entries use."""


def chunk_elements(count: int, itemsize: int) -> int:
    """Elements per chunk: about a quarter of the data, within 1-8 MiB."""
    nbytes = min(max(count * itemsize // 4, CHUNK_MIN_BYTES), CHUNK_MAX_BYTES)
    return max(CHUNK_ALIGN, nbytes // itemsize // CHUNK_ALIGN * CHUNK_ALIGN)


class _Scratch:
    """One concurrent ``run``'s device buffers, staging memory and streams."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.buffers: dict[str, Buffer] = {}
        self.stage: np.ndarray | None = None
        self.streams: list[Stream] = []

    def buffer(self, slot: str, nbytes: int) -> Buffer:
        """The device buffer ``slot``, grown to at least ``nbytes``."""
        buf = self.buffers.get(slot)
        if buf is None or buf.nbytes < nbytes:
            if buf is not None:
                buf.free()
            buf = self.buffers[slot] = self.runner.device.alloc(max(nbytes, 256))
        return buf

    def staging(self, nbytes: int) -> np.ndarray:
        """Pinned host bytes for staging, grown to at least ``nbytes``."""
        if self.stage is None or self.stage.nbytes < nbytes:
            self.stage = self.runner.device.pinned(max(nbytes, 4096), np.uint8)
        return self.stage

    def two_streams(self) -> list[Stream]:
        """Two streams of the device for the pipeline (created once per scratch set)."""
        if not self.streams:
            self.streams = [self.runner.device.create_stream() for _ in range(2)]
        return self.streams

    def free(self) -> None:
        for buf in self.buffers.values():
            buf.free()
        self.buffers.clear()
        self.stage = None
        self.streams = []


class Runner:
    """Runs one program on host arrays (validated by ``Kernel.run`` before they get here)."""

    def __init__(self, program: KernelProgram, spec: Spec) -> None:
        self.program, self.spec = program, spec
        self.device = program.device
        self.host = self.device.has("host_memory")
        self._borrows = self.host and self.device.packs_arguments
        """Host memory with packed arguments: the caller's arrays are borrowed."""
        self._free: list[_Scratch] = []
        self._all: list[_Scratch] = []
        self._lock = threading.Lock()
        self._size = {role: d.itemsize for role, d in program.dtypes.items()}
        self._pipelines = self.device.has("streams")

    # ---- scratch pool ------------------------------------------------------------------------
    def _acquire(self) -> _Scratch:
        with self._lock:
            if self._free:
                return self._free.pop()
            scratch = _Scratch(self)
            self._all.append(scratch)
            return scratch

    def _release(self, scratch: _Scratch) -> None:
        with self._lock:
            self._free.append(scratch)

    def close(self) -> None:
        """Free every scratch set (``Kernel.close``)."""
        with self._lock:
            sets, self._all, self._free = self._all, [], []
        for scratch in sets:
            scratch.free()

    def _pinned(self, *arrays: np.ndarray) -> bool:
        return self._pipelines and all(self.device.pin(a) for a in arrays)

    @staticmethod
    def _on_device(arrays: tuple[Any, ...]) -> bool:
        """True when the arrays are device arrays (all of them: ``InvalidArgument`` for a
        mix of host and device arrays)."""
        on = [type(a) is DeviceArray for a in arrays]
        if not any(on):
            return False
        if not all(on):
            raise InvalidArgument("run: the arrays are partly on the host and partly on the "
                                  "device; pass them all on one side")
        return True

    def _on_host(self, grid: int, values: tuple[Any, ...], p: Any) -> None:
        """Launch on the caller's arrays among ``values`` (counts are ints): as they are
        for a launcher that takes host arrays; on a packing device, as the addresses of
        buffers borrowed over them, waiting for the launch while they are held."""
        prog = self.program
        if not self._borrows:
            prog.enqueue(prog.stream, grid, values, p)
            return
        held = [self.device.borrow(v) if isinstance(v, np.ndarray) else None for v in values]
        prog.enqueue(prog.stream, grid, tuple(v if b is None else b.addr
                                              for v, b in zip(values, held, strict=True)), p)
        prog.stream.synchronize()

    def _in_place(self, arrays: tuple[DeviceArray, ...], grid: int,
                  values: tuple[Any, ...], p: Any) -> None:
        prog = self.program
        s = prog.stream
        order_before(self.device, s, arrays)
        prog.enqueue(s, grid, values, p)
        order_after(self.device, s, arrays)

    # ---- elementwise kinds -----------------------------------------------------------------
    def elementwise(self, arrays: tuple[np.ndarray, ...], n: int, p: Any) -> None:
        """Run an elementwise kind on ``arrays`` (the entry's arrays in order, each holding
        ``n`` elements; the kind's ``arrays`` say which are read and written)."""
        prog = self.program
        if self.host:
            self._on_host(prog.grid(n), (*arrays, n), p)
            return
        if self._on_device(arrays):
            self._in_place(arrays, prog.grid(n), (*(a.addr for a in arrays), n), p)
            return
        described = [(a, role, way) for a, (role, way) in zip(arrays, prog.kind.arrays,
                                                              strict=True)]
        scratch = self._acquire()
        try:
            bufs = [scratch.buffer(f"{role}:{i}", n * self._size[role])
                    for i, (_, role, _) in enumerate(described)]
            widest = max(self._size[role] for _, role, _ in described)
            if (n * widest >= PIPELINE_MIN_BYTES and prog.kind.pipelines
                    and self._pinned(*arrays)):
                self._pipeline(scratch, described, bufs, n, p, chunk_elements(n, widest))
            else:
                self._staged(scratch, described, bufs, n, p)
        finally:
            self._release(scratch)

    def _pipeline(self, scratch: _Scratch, arrays: list[tuple[np.ndarray, str, str]],
                  bufs: list[Buffer], n: int, p: Any, chunk: int) -> None:
        # the scratch buffers, streams and (validated) host arrays are known good: the
        # backend's primitives are called directly, without the public methods' checks
        prog, streams = self.program, scratch.two_streams()
        raw = [(host.reshape(-1).view(np.uint8), self._size[role], way, buf)
               for (host, role, way), buf in zip(arrays, bufs, strict=True)]
        for k, lo in enumerate(range(0, n, chunk)):
            hi, s = min(n, lo + chunk), streams[k & 1]
            addrs = []
            for host, size, way, buf in raw:
                if way != "out":
                    buf._copyin(lo * size, host[lo * size:hi * size], s)
                addrs.append(buf.addr + lo * size)
            prog.enqueue(s, prog.grid(hi - lo), (*addrs, hi - lo), p)
            for host, size, way, buf in raw:
                if way != "in":
                    buf._copyout(lo * size, host[lo * size:hi * size], s)
        for s in streams:
            s.synchronize()

    def _staged(self, scratch: _Scratch, arrays: list[tuple[np.ndarray, str, str]],
                bufs: list[Buffer], n: int, p: Any) -> None:
        prog = self.program
        s = prog.stream
        stage = scratch.staging(sum(a.nbytes for a, _, _ in arrays))
        views, at = [], 0
        for (host, _, way), buf in zip(arrays, bufs, strict=True):
            direct = self.device.pin(host)
            view = host if direct else stage[at:at + host.nbytes]
            at += host.nbytes
            if way != "out":
                if not direct:
                    np.copyto(view, host.reshape(-1).view(np.uint8))
                buf.upload_at_async(0, view, stream=s)
            views.append((view, direct))
        prog.enqueue(s, prog.grid(n), (*(b.addr for b in bufs), n), p)
        for (_, _, way), buf, (view, _) in zip(arrays, bufs, views, strict=True):
            if way != "in":
                buf.download_at_async(0, view, stream=s)
        s.synchronize()
        for (host, _, way), (view, direct) in zip(arrays, views, strict=True):
            if way != "in" and not direct:
                np.copyto(host.reshape(-1).view(np.uint8), view)

    # ---- reduce ---------------------------------------------------------------------------------
    def reduce(self, data: np.ndarray, p: Any) -> Any:
        """The reduce of ``data`` (non-empty) folded on the host with the spec's ``fold``."""
        prog, T = self.program, self.spec.T
        n, size = data.size, self._size["T"]
        blocks = self.device.run_reduce_blocks(prog.entry, n, prog.block_size)
        if self.host:
            partials = np.empty(blocks, T)
            self._on_host(blocks, (data, n, partials), p)
            # one block's partial already starts from the identity: it is the result
            return partials[0] if blocks == 1 else self.spec.fold(partials)
        if self._on_device((data,)):
            return self._reduce_in_place(data, n, blocks, p)  # type: ignore[arg-type]
        scratch = self._acquire()
        try:
            dbuf = scratch.buffer("data", n * size)
            pbuf = scratch.buffer("partials", blocks * size)
            self._upload(scratch, dbuf, data, prog.stream)
            prog.enqueue(prog.stream, blocks, (dbuf.addr, n, pbuf.addr), p)
            return self._fold_partials(scratch, pbuf, blocks, prog.stream)
        finally:
            self._release(scratch)

    def _reduce_in_place(self, data: DeviceArray, n: int, blocks: int, p: Any) -> Any:
        prog, size = self.program, self._size["T"]
        scratch = self._acquire()
        try:
            pbuf = scratch.buffer("partials", blocks * size)
            s = prog.stream
            order_before(self.device, s, (data,))
            prog.enqueue(s, blocks, (data.addr, n, pbuf.addr), p)
            order_after(self.device, s, (data,))
            return self._fold_partials(scratch, pbuf, blocks, s)
        finally:
            self._release(scratch)

    def _fold_partials(self, scratch: _Scratch, pbuf: Buffer, blocks: int, s: Stream) -> Any:
        """The spec's fold of the ``blocks`` partials in ``pbuf``, brought down on ``s``
        behind the launch into the scratch set's page-locked staging memory: one wait
        for the launch and the copy together."""
        nbytes = blocks * self._size["T"]
        partials = scratch.staging(nbytes)[:nbytes].view(self.spec.T)
        pbuf.download_at_async(0, partials, stream=s)
        s.synchronize()
        return self.spec.fold(partials)

    def _upload(self, scratch: _Scratch, buf: Buffer, host: np.ndarray, s: Stream) -> None:
        if self.device.pin(host):
            buf.upload_at_async(0, host, stream=s)
            return
        view = scratch.staging(host.nbytes)[:host.nbytes]
        np.copyto(view, host.reshape(-1).view(np.uint8))
        buf.upload_at_async(0, view, stream=s)
        s.synchronize()  # the staging buffer is reused by the next upload

    # ---- gather / scatter ------------------------------------------------------------------
    def move(self, src: np.ndarray, idx: np.ndarray, out: np.ndarray, n: int,
             bound: int) -> None:
        """Gather or scatter ``n`` elements (``bound``: ``len(src)`` or ``len(out)``)."""
        prog = self.program
        if self.host:
            self._on_host(prog.move_grid(n), (src, idx, out, n, bound), None)
            return
        if self._on_device((src, idx, out)):
            self._in_place((src, idx, out), prog.move_grid(n),  # type: ignore[arg-type]
                           (src.addr, idx.addr, out.addr, n, bound), None)
            return
        scratch = self._acquire()
        try:
            t, isz = self._size["T"], self._size["Idx"]
            sbuf = scratch.buffer("src", src.nbytes)
            ibuf = scratch.buffer("idx", idx.nbytes)
            obuf = scratch.buffer("out", out.nbytes)
            s0 = prog.stream
            self._upload(scratch, sbuf, src, s0)
            if (prog.kind.pipelines and n * max(t, isz) >= PIPELINE_MIN_BYTES
                    and self._pinned(idx, out)):
                s0.synchronize()  # src is complete before any chunk reads it
                chunk = chunk_elements(n, max(t, isz))
                streams = scratch.two_streams()
                for k, lo in enumerate(range(0, n, chunk)):
                    hi, s = min(n, lo + chunk), streams[k & 1]
                    ibuf.upload_at_async(lo * isz, idx[lo:hi], stream=s)
                    obuf.upload_at_async(lo * t, out[lo:hi], stream=s)  # skipped ones stay
                    prog.enqueue(s, prog.move_grid(hi - lo),
                                 (sbuf.addr, ibuf.addr + lo * isz, obuf.addr + lo * t,
                                  hi - lo, bound), None)
                    obuf.download_at_async(lo * t, out[lo:hi], stream=s)
                for s in streams:
                    s.synchronize()
                return
            self._upload(scratch, ibuf, idx, s0)
            self._upload(scratch, obuf, out, s0)  # positions no index reaches keep their values
            prog.enqueue(s0, prog.move_grid(n),
                         (sbuf.addr, ibuf.addr, obuf.addr, n, bound), None)
            s0.synchronize()
            obuf.download(out)
        finally:
            self._release(scratch)
