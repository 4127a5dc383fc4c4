"""GemmClient: numpy-level calls of gemm.v1.GemmService over gRPC.

Thread-safety: one GemmClient may be used from several threads (gRPC channels are thread-safe);
`last_timing` then reflects whichever call finished last.
"""

import dataclasses
import importlib.resources
import itertools
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from ._proto import gemm_service_pb2 as pb
from ._proto import gemm_service_pb2_grpc as pb_grpc
from .bf16 import from_bf16, to_bf16

__all__ = ["GemmClient", "GemmError", "ResidentMatrix"]

_DEFAULT_MAX_MESSAGE = (1 << 30) + (16 << 20)
_CHUNK = 4 << 20
_LAYOUTS = {"kn": pb.B_LAYOUT_KN, "nk": pb.B_LAYOUT_NK}
_DTYPES = {"bf16": pb.DTYPE_BF16, "fp32": pb.DTYPE_FP32}
_PRIORITIES = {"normal": pb.PRIORITY_NORMAL, "high": pb.PRIORITY_HIGH}


class GemmError(Exception):
    """A failed call: `code` is the grpc.StatusCode, `message` the server's explanation."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


def _status_code(value: int) -> grpc.StatusCode:
    for c in grpc.StatusCode:
        if c.value[0] == value:
            return c
    return grpc.StatusCode.UNKNOWN


def _rpc_error(e: grpc.RpcError) -> GemmError:
    return GemmError(e.code(), e.details() or "")


class ResidentMatrix:
    """A matrix registered on the server for use as B. Pass it to matmul() instead of an array.
    Release it with release() or by using it as a context manager."""

    def __init__(self, client: "GemmClient", info):
        self._client = client
        self.info = info  # gemm.v1.MatrixInfo
        self.handle: str = info.handle
        self.layout: str = "nk" if info.layout == pb.B_LAYOUT_NK else "kn"
        rows, cols = int(info.rows), int(info.cols)
        # (K, N) of the GEMMs it takes part in.
        self.k, self.n = (cols, rows) if self.layout == "nk" else (rows, cols)
        self.released = False

    def release(self) -> None:
        """Releases the matrix on the server (idempotent)."""
        if not self.released:
            self._client.release(self.handle)
            self.released = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        return f"ResidentMatrix(handle={self.handle!r}, k={self.k}, n={self.n}, layout={self.layout})"


BOperand = Union[np.ndarray, ResidentMatrix, str]


@dataclasses.dataclass(frozen=True)
class Tls:
    """TLS settings of a GemmClient: PEM files of the CA that signed the server's certificate
    (None: the system's CAs) and, for mutual TLS, the client's certificate and key."""
    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials reading the files now."""
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("tls: set cert_file and key_file together")

        def read(path):
            if path is None:
                return None
            with open(path, "rb") as f:
                return f.read()
        return grpc.ssl_channel_credentials(root_certificates=read(self.ca_file),
                                            private_key=read(self.key_file),
                                            certificate_chain=read(self.cert_file))


def _channel_credentials(tls, token: Optional[str]) -> Optional[grpc.ChannelCredentials]:
    """Credentials for `tls` (None/False: plaintext, True: system CAs, a Tls) and `token` (sent as
    "authorization: Bearer <token>"; implies TLS, since gRPC sends no token in plaintext)."""
    if not tls and token is None:
        return None
    if tls is True or not tls:
        tls = Tls()
    if not isinstance(tls, Tls):
        raise TypeError(f"tls: expected None, True or gemm_client.Tls, got {type(tls).__name__}")
    creds = tls.credentials()
    if token is not None:
        creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
    return creds


# Retries calls answered UNAVAILABLE (a replica draining, starting or gone) through gRPC's retry
# policy: up to 5 attempts, exponential backoff from 50 ms to 1 s; each retry is load-balanced
# again, so a rolling restart of the servers behind a target costs no failed call; with
# round_robin, servers whose health check says NOT_SERVING (draining) get no new calls. The same
# policy as the C++ client's (both read retry_service_config.json).
RETRY_SERVICE_CONFIG = (importlib.resources.files(__package__) /
                        "retry_service_config.json").read_text(encoding="utf-8")


class GemmClient:
    """Client of one gemm-service target ("host:port", "dns:///name:port", ...).

    matmul() and friends take numpy arrays (any real dtype; rounded to BF16, nearest even) and
    return float32 arrays (BF16 outputs are widened exactly). Failures raise GemmError; inputs
    that cannot form a valid problem raise ValueError before anything is sent.
    """

    def __init__(self, target: str = "localhost:50051", *, timeout: Optional[float] = 60.0,
                 max_message_bytes: int = _DEFAULT_MAX_MESSAGE,
                 options: Sequence[Tuple[str, object]] = (),
                 tls: Union[None, bool, Tls] = None, token: Optional[str] = None,
                 retry_unavailable: bool = True):
        """`timeout`: default deadline of every call in seconds (None: none).
        `max_message_bytes`: gRPC send/receive limit; match the server's --max_message_bytes.
        `options`: extra gRPC channel arguments.
        `tls`: None (plaintext), True (TLS verified by the system's CAs) or Tls(ca_file=...,
        cert_file=..., key_file=...). `token`: bearer token sent with every call (implies TLS).
        `retry_unavailable`: retry calls answered UNAVAILABLE (RETRY_SERVICE_CONFIG)."""
        opts = [("grpc.max_send_message_length", int(max_message_bytes)),
                ("grpc.max_receive_message_length", int(max_message_bytes))]
        if retry_unavailable:
            opts += [("grpc.enable_retries", 1),
                     ("grpc.service_config", RETRY_SERVICE_CONFIG),
                     ("grpc.per_rpc_retry_buffer_size", int(max_message_bytes))]
        opts += list(options)
        self.target = target
        self.timeout = timeout
        creds = _channel_credentials(tls, token)
        self._channel = (grpc.insecure_channel(target, options=opts) if creds is None
                         else grpc.secure_channel(target, creds, options=opts))
        self._stub = pb_grpc.GemmServiceStub(self._channel)
        self._ids = itertools.count()
        self.last_timing = None  # gemm.v1.Timing of the last successful unary call
        self.last_kernel = ""

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Closes the channel."""
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Blocks until the channel is connected; raises GemmError(UNAVAILABLE) after `timeout`."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise GemmError(grpc.StatusCode.UNAVAILABLE,
                            f"{self.target} not ready after {timeout}s") from None

    # ------------------------------------------------------------------ GEMM

    def matmul(self, a, b: BOperand, *, b_layout: str = "kn", output_dtype: str = "bf16",
               alpha: Optional[float] = None, beta: Optional[float] = None, c=None,
               priority: str = "normal", kernel: str = "",
               timeout: Optional[float] = None, shm=None) -> np.ndarray:
        """Returns alpha * a @ op(b) (+ beta * c) as float32.

        a: [..., K] (leading dimensions are flattened into M and restored in the result).
        b: [K,N] (b_layout="kn", numpy a @ b), [N,K] (b_layout="nk", a @ b.T, e.g. a PyTorch Linear
           weight), or a ResidentMatrix / handle string (its registered layout applies).
        output_dtype: "bf16" (server default; values are BF16-rounded) or "fp32".
        shm: a SharedMemoryRegion (shared_memory()); A travels and D returns through it (server
           on this host), not inside the messages. Not safe for concurrent calls on one region.
        """
        a = np.asarray(a)
        if a.ndim < 2:
            raise ValueError(f"a must have at least 2 dimensions, got shape {a.shape}")
        lead = a.shape[:-1]
        a2 = a.reshape(-1, a.shape[-1])
        problem, (m, n) = self._problem(a2, b, b_layout, output_dtype, alpha, beta, c)
        req = self._request(priority, kernel)
        req.problem.CopyFrom(problem)
        d_at = None
        if shm is not None:
            # A at the region's start, D after it.
            a_bytes = problem.a
            d_bytes = m * n * (2 if output_dtype == "bf16" else 4)
            d_at = shm.aligned(len(a_bytes))
            req.problem.a_shm.CopyFrom(shm.ref(0, len(a_bytes)))
            req.problem.d_shm.CopyFrom(shm.ref(d_at, d_bytes))
            shm.buf[0:len(a_bytes)] = a_bytes
            req.problem.ClearField("a")
        resp = self._call_gemm(req, timeout)
        output = resp.outputs[0]
        if shm is not None:
            output = pb.Output(shape=output.shape, dtype=output.dtype,
                               data=bytes(shm.buf[d_at:d_at + d_bytes]))
        out = self._decode(output)
        return out.reshape(*lead, n)

    def matmul_batch(self, a, b: BOperand, *, b_layout: str = "kn", output_dtype: str = "bf16",
                     priority: str = "normal", kernel: str = "",
                     timeout: Optional[float] = None) -> np.ndarray:
        """Equal-shape batch: a [count,M,K]; b [count,K,N] (one per entry), [K,N] (shared) or a
        resident matrix (shared). Returns float32 [count,M,N]."""
        a = np.asarray(a)
        if a.ndim != 3:
            raise ValueError(f"a must be [count,M,K], got shape {a.shape}")
        count, m, k = a.shape
        req = self._request(priority, kernel)
        req.batch.count = count
        p = req.batch.problem
        p.m, p.k = m, k
        p.a = to_bf16(a).tobytes()
        p.output_dtype = _DTYPES[output_dtype]
        if isinstance(b, (ResidentMatrix, str)):
            rm = self._resolve(b)
            if rm.k != k:
                raise ValueError(f"resident B has K={rm.k}, a has K={k}")
            p.n = rm.n
            p.b_handle = rm.handle
        else:
            b = np.asarray(b)
            if b.ndim == 3 and b.shape[0] != count:
                raise ValueError(f"b has {b.shape[0]} matrices, a has {count}")
            if b.ndim not in (2, 3):
                raise ValueError(f"b must be [K,N], [N,K] or [count,...], got shape {b.shape}")
            bk, bn = b.shape[-2:] if b_layout == "kn" else b.shape[-1:-3:-1]
            if bk != k:
                raise ValueError(f"b has K={bk}, a has K={k}")
            p.n = bn
            p.b = to_bf16(b).tobytes()
            p.b_layout = _LAYOUTS[b_layout]
        resp = self._call_gemm(req, timeout)
        return self._decode(resp.outputs[0]).reshape(count, m, p.n)

    def matmul_group(self, pairs: Iterable[Tuple[np.ndarray, BOperand]], *, b_layout: str = "kn",
                     output_dtype: str = "bf16", priority: str = "normal", kernel: str = "",
                     timeout: Optional[float] = None) -> List[np.ndarray]:
        """Problems of different shapes in one request: [(a0, b0), (a1, b1), ...] -> [d0, d1, ...]."""
        req = self._request(priority, kernel)
        shapes = []
        for a, b in pairs:
            problem, mn = self._problem(np.asarray(a), b, b_layout, output_dtype, None, None, None)
            req.group.problems.append(problem)
            shapes.append(mn)
        resp = self._call_gemm(req, timeout)
        return [self._decode(o).reshape(mn) for o, mn in zip(resp.outputs, shapes)]

    # A GemmStreamPacked message carries requests up to this many bytes (at least one).
    PACK_BYTES = 64 << 20

    def matmul_many(self, pairs: Iterable[Tuple[np.ndarray, BOperand]], *, b_layout: str = "kn",
                    output_dtype: str = "bf16", priority: str = "normal", kernel: str = "",
                    timeout: Optional[float] = None, packed: bool = False) -> List[np.ndarray]:
        """Many independent GEMMs over one GemmStream (pipelined, the server may batch them).
        With packed=True over GemmStreamPacked instead: the requests go in as few messages as
        fit PACK_BYTES each, and the answers come back several per message (much less
        per-message work in Python for many small requests).
        Returns the results in input order; raises GemmError for the first failed request."""
        requests = []
        shapes = []
        for i, (a, b) in enumerate(pairs):
            problem, mn = self._problem(np.asarray(a), b, b_layout, output_dtype, None, None, None)
            req = self._request(priority, kernel)
            req.request_id = str(i)
            req.problem.CopyFrom(problem)
            requests.append(req)
            shapes.append(mn)
        results = [None] * len(requests)

        def take(resp):
            i = int(resp.request_id)
            if resp.HasField("error"):
                results[i] = GemmError(_status_code(resp.error.code), resp.error.message)
            else:
                results[i] = self._decode(resp.outputs[0]).reshape(shapes[i])

        try:
            if packed:
                for pack in self._stub.GemmStreamPacked(iter(self._packs(requests)),
                                                        timeout=self._timeout(timeout)):
                    for resp in pack.responses:
                        take(resp)
            else:
                for resp in self._stub.GemmStream(iter(requests), timeout=self._timeout(timeout)):
                    take(resp)
        except grpc.RpcError as e:
            raise _rpc_error(e) from None
        for r in results:
            if isinstance(r, GemmError):
                raise r
            if r is None:
                raise GemmError(grpc.StatusCode.DATA_LOSS, "stream ended without every response")
        return results

    # ------------------------------------------------------------------ resident matrices

    def register(self, b, *, layout: str = "kn", name: str = "",
                 devices: Sequence[int] = (), timeout: Optional[float] = None,
                 handle: str = "", replace: bool = False) -> ResidentMatrix:
        """Uploads `b` (rounded to BF16) to keep on the server as a B operand. layout "kn": b is
        [K,N]; "nk": b is [N,K] (a PyTorch Linear weight). Sent in 4 MiB chunks, so matrices over
        protobuf's 2 GB limit work. `handle`: a stable name to register it under (the same on
        every replica; registering the same content again is a no-op, other content raises
        ALREADY_EXISTS unless `replace`)."""
        b = np.asarray(b)
        if b.ndim != 2:
            raise ValueError(f"b must be 2-D, got shape {b.shape}")
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be 'kn' or 'nk', got {layout!r}")
        data = to_bf16(b).tobytes()
        header = pb.MatrixHeader(name=name, rows=b.shape[0], cols=b.shape[1],
                                 dtype=pb.DTYPE_BF16, layout=_LAYOUTS[layout], devices=list(devices),
                                 handle=handle, replace=replace)

        def chunks():
            offset = 0
            while True:
                chunk = pb.RegisterMatrixChunk(offset=offset, data=data[offset:offset + _CHUNK])
                if offset == 0:
                    chunk.header.CopyFrom(header)
                yield chunk
                offset += _CHUNK
                if offset >= len(data):
                    return

        try:
            info = self._stub.RegisterMatrix(chunks(), timeout=self._timeout(timeout))
        except grpc.RpcError as e:
            raise _rpc_error(e) from None
        return ResidentMatrix(self, info)

    def release(self, handle: Union[str, ResidentMatrix]) -> None:
        """Releases a resident matrix by handle."""
        if isinstance(handle, ResidentMatrix):
            handle.release()
            return
        try:
            self._stub.ReleaseMatrix(pb.ReleaseMatrixRequest(handle=handle),
                                     timeout=self._timeout(None))
        except grpc.RpcError as e:
            raise _rpc_error(e) from None

    def list_matrices(self) -> list:
        """The resident matrices (gemm.v1.MatrixInfo messages)."""
        try:
            return list(self._stub.ListMatrices(pb.ListMatricesRequest(),
                                                timeout=self._timeout(None)).matrices)
        except grpc.RpcError as e:
            raise _rpc_error(e) from None

    def shared_memory(self, size: int, name: Optional[str] = None):
        """A new SharedMemoryRegion of `size` bytes registered on the server (same host only)."""
        from .shm import SharedMemoryRegion
        return SharedMemoryRegion(self, size, name)

    def register_shared_memory(self, name: str, key: str, offset: int, byte_size: int):
        """Registers bytes [offset, offset + byte_size) of the POSIX shared-memory object `key`
        ("/name") as region `name`; returns gemm.v1.SharedMemoryInfo."""
        try:
            return self._stub.RegisterSharedMemory(
                pb.RegisterSharedMemoryRequest(name=name, key=key, offset=offset,
                                               byte_size=byte_size),
                timeout=self._timeout(None))
        except grpc.RpcError as e:
            raise _rpc_error(e) from None

    def register_cuda_memory(self, name: str, ipc_handle: bytes, device: int, offset: int,
                             byte_size: int):
        """Registers bytes [offset, offset + byte_size) of a GPU allocation of this process as
        region `name` (CUDA backend, same host): `ipc_handle` is the allocation's
        cudaIpcMemHandle_t (64 bytes, e.g. cupy.cuda.runtime.ipcGetMemHandle(ptr)) and `device`
        the GPU's ordinal as the server numbers it. Operands and outputs referenced there move
        device to device. Returns gemm.v1.SharedMemoryInfo."""
        try:
            return self._stub.RegisterSharedMemory(
                pb.RegisterSharedMemoryRequest(name=name, cuda_ipc_handle=bytes(ipc_handle),
                                               device=device, offset=offset,
                                               byte_size=byte_size),
                timeout=self._timeout(None))
        except grpc.RpcError as e:
            raise _rpc_error(e) from None

    def unregister_shared_memory(self, name: str) -> None:
        """Unregisters region `name` (requests still using it finish first)."""
        try:
            self._stub.UnregisterSharedMemory(pb.UnregisterSharedMemoryRequest(name=name),
                                              timeout=self._timeout(None))
        except grpc.RpcError as e:
            raise _rpc_error(e) from None

    def server_info(self):
        """The server's description (gemm.v1.ServerInfo: version, backend, devices, limits)."""
        try:
            return self._stub.GetServerInfo(pb.GetServerInfoRequest(), timeout=self._timeout(None))
        except grpc.RpcError as e:
            raise _rpc_error(e) from None

    # ------------------------------------------------------------------ internals

    @classmethod
    def _packs(cls, requests) -> List[pb.GemmRequestPack]:
        """The requests in order, in packs of at most PACK_BYTES (at least one request each)."""
        packs, size = [], 0
        for req in requests:
            n = req.ByteSize()
            if not packs or (size + n > cls.PACK_BYTES and len(packs[-1].requests) > 0):
                packs.append(pb.GemmRequestPack())
                size = 0
            packs[-1].requests.append(req)
            size += n
        return packs

    def _timeout(self, timeout: Optional[float]) -> Optional[float]:
        return self.timeout if timeout is None else timeout

    def _request(self, priority: str, kernel: str):
        if priority not in _PRIORITIES:
            raise ValueError(f"priority must be 'normal' or 'high', got {priority!r}")
        return pb.GemmRequest(request_id=str(next(self._ids)), priority=_PRIORITIES[priority],
                              kernel=kernel)

    def _resolve(self, b: Union[ResidentMatrix, str]) -> ResidentMatrix:
        if isinstance(b, ResidentMatrix):
            return b
        for info in self.list_matrices():
            if info.handle == b:
                return ResidentMatrix(self, info)
        raise GemmError(grpc.StatusCode.NOT_FOUND, f"no resident matrix with handle {b!r}")

    def _problem(self, a, b, b_layout, output_dtype, alpha, beta, c):
        if a.ndim != 2:
            raise ValueError(f"a must be [M,K], got shape {a.shape}")
        if b_layout not in _LAYOUTS:
            raise ValueError(f"b_layout must be 'kn' or 'nk', got {b_layout!r}")
        if output_dtype not in _DTYPES:
            raise ValueError(f"output_dtype must be 'bf16' or 'fp32', got {output_dtype!r}")
        m, k = a.shape
        p = pb.Problem(m=m, k=k, a=to_bf16(a).tobytes(), output_dtype=_DTYPES[output_dtype])
        if isinstance(b, (ResidentMatrix, str)):
            rm = self._resolve(b)
            if rm.k != k:
                raise ValueError(f"resident B has K={rm.k}, a has K={k}")
            n = rm.n
            p.b_handle = rm.handle
        else:
            b = np.asarray(b)
            if b.ndim != 2:
                raise ValueError(f"b must be 2-D, got shape {b.shape}")
            bk, n = b.shape if b_layout == "kn" else b.shape[::-1]
            if bk != k:
                raise ValueError(f"shapes do not match: a is {a.shape}, b ({b_layout}) is {b.shape}")
            p.b = to_bf16(b).tobytes()
            p.b_layout = _LAYOUTS[b_layout]
        p.n = n
        if alpha is not None:
            p.alpha = float(alpha)
        if beta is not None:
            p.beta = float(beta)
        if c is not None:
            c = np.asarray(c)
            if c.shape != (m, n):
                raise ValueError(f"c must be [{m},{n}], got shape {c.shape}")
            p.c = (to_bf16(c).tobytes() if output_dtype == "bf16"
                   else np.ascontiguousarray(c, dtype="<f4").tobytes())
        return p, (m, n)

    def _call_gemm(self, req, timeout):
        try:
            resp = self._stub.Gemm(req, timeout=self._timeout(timeout))
        except grpc.RpcError as e:
            raise _rpc_error(e) from None
        self.last_timing = resp.timing
        self.last_kernel = resp.kernel
        return resp

    @staticmethod
    def _decode(output) -> np.ndarray:
        shape = tuple(int(d) for d in output.shape)
        if output.dtype == pb.DTYPE_FP32:
            arr = np.frombuffer(output.data, dtype="<f4").astype(np.float32)
        else:
            arr = from_bf16(np.frombuffer(output.data, dtype="<u2"))
        return arr.reshape(shape)
