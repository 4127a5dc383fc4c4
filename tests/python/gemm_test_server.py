"""Test helper: starts the real gemm_server on a free loopback port and stops it.

Used by the Python client tests and the load-generator tests (run with /usr/bin/python3).
"""

import os
import signal
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import grpc  # noqa: E402

from gemm_client._proto import gemm_service_pb2 as pb  # noqa: E402
from gemm_client._proto import gemm_service_pb2_grpc as pb_grpc  # noqa: E402


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def backend() -> str:
    """The server backend the tests run against: GEMM_TEST_BACKEND (cpu by default; cuda on the
    GPU machine)."""
    return os.environ.get("GEMM_TEST_BACKEND", "cpu")


class Server:
    """A gemm_server child process: Server(binary, extra_flags).start() ... .stop(). `port`: listen
    there (default: a free port, a fresh one when it was taken in between)."""

    def __init__(self, binary: str, flags=(), log_path: str = None, port: int = None,
                 credentials: grpc.ChannelCredentials = None):
        """`credentials`: what the readiness check connects with (default: plaintext)."""
        self.binary = binary
        self.credentials = credentials
        self.flags = list(flags)
        self.fixed_port = port
        self.port = None
        self.proc = None
        self.log_path = log_path
        self._log = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, ready_timeout: float = 30.0) -> "Server":
        last_error = None
        for _ in range(1 if self.fixed_port else 3):  # a free port may be taken in between
            self.port = self.fixed_port or free_port()
            cmd = [self.binary, f"--backend={backend()}", "--host=127.0.0.1", f"--port={self.port}",
                   "--metrics_port=0"] + self.flags
            self._log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
            self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=self._log)
            try:
                self._wait_ready(ready_timeout)
                return self
            except RuntimeError as e:
                last_error = e
                self.stop()
        raise RuntimeError(f"gemm_server did not start: {last_error}")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with (grpc.insecure_channel(self.target) if self.credentials is None
              else grpc.secure_channel(self.target, self.credentials)) as channel:
            stub = pb_grpc.GemmServiceStub(channel)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"exited with {self.proc.returncode}")
                try:
                    stub.GetServerInfo(pb.GetServerInfoRequest(), timeout=1.0)
                    return
                except grpc.RpcError:
                    time.sleep(0.1)
        raise RuntimeError(f"not ready after {timeout}s")

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then SIGKILL after `timeout`; returns the exit code."""
        rc = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        elif self.proc is not None:
            rc = self.proc.returncode
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()
            self._log = None
        return rc

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
