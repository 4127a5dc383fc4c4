"""Python client of gemm-service (gemm.v1.GemmService): numpy in, numpy out.

    from gemm_client import GemmClient
    with GemmClient("localhost:50051") as c:
        d = c.matmul(a, b)                  # a [M,K], b [K,N] -> float32 [M,N] (BF16-rounded)
        w = c.register(weight, layout="nk") # resident B, e.g. a PyTorch Linear weight [N,K]
        y = c.matmul(x, w)                  # only x travels
        w.release()
        with c.shared_memory(64 << 20) as shm:   # same host: A and D by reference
            y = c.matmul(x, w, shm=shm)

Works with Debian 12's python3-grpcio, python3-protobuf and python3-numpy.
"""

from .bf16 import from_bf16, round_to_bf16, to_bf16
from .client import GemmClient, GemmError, ResidentMatrix, Tls
from .shm import SharedMemoryRegion

__all__ = ["GemmClient", "GemmError", "ResidentMatrix", "SharedMemoryRegion", "Tls", "to_bf16",
           "from_bf16", "round_to_bf16"]
