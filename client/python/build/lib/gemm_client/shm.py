"""SharedMemoryRegion: a POSIX shared-memory object of this process registered on a gemm-service
server on the same host, so matmul() passes A and receives D by reference instead of inside the
gRPC messages (the server's CUDA backend page-locks the region: the GPU copies read and write it
in place).

    with GemmClient("localhost:50051") as c, c.shared_memory(64 << 20) as shm:
        y = c.matmul(x, w, shm=shm)
"""

import os
import secrets
from multiprocessing import shared_memory
from typing import Optional

import grpc

from ._proto import gemm_service_pb2 as pb
from .client import GemmError

__all__ = ["SharedMemoryRegion"]

_ALIGN = 4096


class SharedMemoryRegion:
    """`size` bytes of new shared memory, registered on `client`'s server as region `name`
    (default: the object's name). close() (or leaving a `with` block) unregisters and frees it."""

    def __init__(self, client, size: int, name: Optional[str] = None):
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self._client = client
        # NOTE: the server only maps objects named with its --shared_memory_key_prefix ("/gemm").
        self._shm = shared_memory.SharedMemory(
            create=True, size=int(size), name=f"gemm_py_{os.getpid()}_{secrets.token_hex(6)}")
        self.size = int(size)
        self.name = name or self._shm.name
        try:
            self.info = client.register_shared_memory(self.name, "/" + self._shm.name, 0,
                                                      self.size)
        except Exception:
            self._shm.close()
            self._shm.unlink()
            raise

    @property
    def buf(self) -> memoryview:
        """The region's bytes."""
        return self._shm.buf

    def ref(self, offset: int, byte_size: int):
        """A gemm.v1.SharedMemoryRef to [offset, offset + byte_size) of this region."""
        if offset < 0 or byte_size < 1 or offset + byte_size > self.size:
            raise ValueError(f"[{offset}, {offset + byte_size}) is not inside the region "
                             f"({self.size} bytes)")
        return pb.SharedMemoryRef(region=self.name, offset=offset, byte_size=byte_size)

    @staticmethod
    def aligned(offset: int) -> int:
        """`offset` rounded up to the region layout's alignment (4 KiB)."""
        return (offset + _ALIGN - 1) // _ALIGN * _ALIGN

    def close(self) -> None:
        """Unregisters the region (requests still using it finish) and frees it. Idempotent."""
        if self._shm is None:
            return
        try:
            self._client.unregister_shared_memory(self.name)
        except GemmError as e:
            # Already gone there (server restarted or unreachable): still free our memory.
            if e.code not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE):
                raise
        finally:
            self._shm.close()
            self._shm.unlink()
            self._shm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"SharedMemoryRegion(name={self.name!r}, size={self.size})"
