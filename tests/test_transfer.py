"""The transfer checks every backend's buffers share (gompute_core.backend.transfer)."""

from __future__ import annotations

import numpy as np
import pytest

from gompute_core.backend.transfer import device_span, host_span
from gompute_core.errors import InvalidArgument


def test_host_span_is_a_flat_byte_view_of_the_requested_bytes() -> None:
    host = np.arange(6, dtype=np.int32).reshape(2, 3)
    view, n = host_span(host, None, "upload")
    assert n == 24 and view.dtype == np.uint8 and view.shape == (24,)
    assert np.shares_memory(view, host)
    assert host_span(host, 8, "upload")[1] == 8


@pytest.mark.parametrize("host, nbytes, writable, match", [
    ([1, 2], None, False, "expected a NumPy array, got list"),
    (np.zeros((4, 4), np.float32)[:, 1], None, False, "C-contiguous"),
    (np.zeros(4, np.float32), 17, False, "exceeds the host array's 16 bytes"),
    (np.zeros(4, np.float32), -1, False, "nbytes must be a non-negative int"),
    (np.zeros(4, np.float32), 2.0, False, "nbytes must be a non-negative int"),
])
def test_host_span_refuses_bad_host_sides(host, nbytes, writable, match) -> None:
    with pytest.raises(InvalidArgument, match=match):
        host_span(host, nbytes, "upload", writable)


def test_download_into_a_read_only_array_is_refused() -> None:
    host = np.zeros(4, np.float32)
    host.flags.writeable = False
    host_span(host, None, "upload")  # reading it is fine
    with pytest.raises(InvalidArgument, match="download: the host array is read-only"):
        host_span(host, None, "download", writable=True)


def test_device_span_bounds() -> None:
    assert device_span(8, 8, 16, "upload_at") == 8
    assert device_span(np.int64(16), 0, 16, "upload_at") == 16
    with pytest.raises(InvalidArgument,
                       match=r"upload_at: offset=9, nbytes=8: bytes \[9, 17\) are past the end"):
        device_span(9, 8, 16, "upload_at")
    with pytest.raises(InvalidArgument, match="offset must be a non-negative int"):
        device_span(-1, 1, 16, "upload_at")
    with pytest.raises(InvalidArgument, match="offset must be a non-negative int"):
        device_span(True, 1, 16, "upload_at")
