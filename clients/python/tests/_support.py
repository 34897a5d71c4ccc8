"""Test support: the real service as a child process, CSV files, and a fault proxy.

The service is ``deno run -A main.ts serve --dev`` from this repository (``ABN_DENO``, else
``deno`` on PATH) on a free port of 127.0.0.1 with a fresh data directory; ``--dev`` makes the
organization ``dev`` and writes its key to ``{ABN_DATA_DIR}/dev-api-key``.
"""

import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple, Union
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[3]
MAIN = REPO / "main.ts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unique(prefix: str) -> str:
    """A fresh experiment id, so that tests sharing a server never meet."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def deno() -> str:
    found = os.environ.get("ABN_DENO") or shutil.which("deno")
    if not found:
        raise RuntimeError("The client's tests start the service: set ABN_DENO or put deno on PATH")
    return found


def _die_with_parent() -> None:
    """In the child before exec (Linux): a SIGTERM when the test process dies, killed or not, so
    that no service outlives its tests."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Server:
    """The service as a child process; ``stop()`` ends it and removes its data directory."""

    def __init__(self, env: Optional[Dict[str, str]] = None, port: Optional[int] = None):
        self.port = port or free_port()
        self.data_dir = Path(tempfile.mkdtemp(prefix="abn-pyclient-"))
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(self.data_dir / "server.log", "wb")
        child_env = {
            # The caller's own ABN_* settings (a public URL, a database) are not the test's.
            **{k: v for k, v in os.environ.items() if not k.startswith("ABN_")},
            "ABN_DATA_DIR": str(self.data_dir),
            "ABN_HOST": "127.0.0.1",
            "ABN_PORT": str(self.port),
            **(env or {}),
        }
        self.process = subprocess.Popen(
            [deno(), "run", "-A", str(MAIN), "serve", "--dev"],
            env=child_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=str(REPO),
            preexec_fn=_die_with_parent,
        )
        try:
            self.api_key = self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> str:
        key_file = self.data_dir / "dev-api-key"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as res:
                    if res.status == 200 and key_file.exists():
                        return key_file.read_text().strip()
            except OSError:
                pass
            time.sleep(0.1)
        log = (self.data_dir / "server.log").read_text(errors="replace")
        raise RuntimeError(f"the service did not start:\n{log}")

    def stored(self, experiment_id: str) -> Optional[bytes]:
        """The bytes stored for the experiment (local storage), or None."""
        found = list(self.data_dir.glob(f"storage/org/*/experiments/{experiment_id}/latest.csv"))
        return found[0].read_bytes() if found else None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def csv_bytes(approx_bytes: int, seed: int = 0, variants: Tuple[str, ...] = ("A", "B")) -> bytes:
    """A valid CSV of about ``approx_bytes`` bytes (at least two rows); ``seed`` changes it."""
    header = "user_id,variant,date,converted,revenue\n"
    lines = [header]
    size = len(header)
    i = 0
    while size < approx_bytes or i < 2:
        v = variants[i % len(variants)]
        line = (
            f"u{seed}_{i},{v},2026-01-0{1 + i % 9},{1 if (i + seed) % 3 == 0 else 0},{i % 50}.25\n"
        )
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines).encode()


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


#: What a proxy rule answers for one request: None (forward it), "drop" (close the connection
#: without an answer), ("delay", seconds) (forward it that much later), or
#: (status, headers, body) (answer that instead, after reading the body).
Action = Union[None, str, Tuple[str, float], Tuple[int, Dict[str, str], bytes]]


def error_answer(status: int, code: str, headers: Optional[Dict[str, str]] = None):
    body = json.dumps(
        {"error": {"code": code, "message": f"injected {code}", "request_id": "proxy"}}
    )
    return (status, {"Content-Type": "application/json", **(headers or {})}, body.encode())


class FaultProxy:
    """A loopback HTTP proxy in front of the service: ``rule(line, n)`` picks what happens to
    each request (``line`` is ``"METHOD /path"``, ``n`` how many requests of that line it has
    seen, this one included); ``seen`` lists every request's line in order."""

    def __init__(self, target: str, rule: Callable[[str, int], Action] = lambda line, n: None):
        self.target = urlsplit(target)
        self.rule = rule
        self.seen: List[str] = []
        self.headers: List[Dict[str, str]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def count(self, prefix: str) -> int:
        return sum(1 for line in self.seen if line.startswith(prefix))

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        path = urlsplit(handler.path).path
        line = f"{handler.command} {path}"
        with self._lock:
            self.seen.append(line)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            n = sum(1 for s in self.seen if s == line)
        action = self.rule(line, n)
        if action == "drop":
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        if isinstance(action, tuple) and action[0] == "delay":
            time.sleep(float(action[1]))
            action = None
        if action is None:
            status, headers, answer = self._forward(handler, body)
        else:
            status, headers, answer = action  # type: ignore[misc]
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(answer)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(answer)
        handler.close_connection = True

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes):
        conn = http.client.HTTPConnection(self.target.hostname, self.target.port, timeout=60)
        try:
            headers = {
                k: v
                for k, v in handler.headers.items()
                if k.lower() not in ("host", "connection", "content-length")
            }
            conn.request(handler.command, handler.path, body=body, headers=headers)
            res = conn.getresponse()
            answer = res.read()
            kept = {
                k: v
                for k, v in res.getheaders()
                if k.lower() not in ("content-length", "connection", "transfer-encoding")
            }
            return res.status, kept, answer
        finally:
            conn.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
