"""HTTP over the standard library: JSON calls, and a file streamed from disk as a request body.

Each call opens a connection of its own and closes it after the answer (the service closes the
connection after a large body anyway, and nothing then lingers in a pool between a pipeline's
steps). A file body is read 1 MiB at a time into one reused buffer, sent with the file's size as
``Content-Length`` (S3 refuses chunked PUTs and a presigned URL may sign the length; the service
refuses an oversize declared length before reading the body), and watched for an early answer: the
service answers a CSV error as soon as it sees it, while the client may still be sending, and the
client then stops sending and reads that answer.
"""

import http.client
import io
import selectors
import socket
import ssl
from typing import Callable, Mapping, Optional
from urllib.parse import SplitResult, urlsplit

from ._errors import FileChangedError, NetworkError
from ._version import __version__

USER_AGENT = f"abn-client/{__version__} (python)"
CHUNK_BYTES = 1 << 20
#: An upload's answer is kept up to this size (the service's JSON, an S3 XML error).
MAX_ANSWER_BYTES = 1 << 20


class Answer:
    """An HTTP answer: status, headers (case-insensitive ``get``) and body bytes."""

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def _connect(
    url: SplitResult, timeout: float, ssl_context: Optional[ssl.SSLContext]
) -> http.client.HTTPConnection:
    if url.scheme == "https":
        return http.client.HTTPSConnection(
            url.hostname or "", url.port, timeout=timeout, context=ssl_context
        )
    return http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)


def _target(url: SplitResult) -> str:
    return (url.path or "/") + (f"?{url.query}" if url.query else "")


def _reason(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, (socket.timeout, TimeoutError)):
        return f"timed out ({text})"
    return text


def request(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: Optional[bytes] = None,
    *,
    timeout: float = 60.0,
    ssl_context: Optional[ssl.SSLContext] = None,
) -> Answer:
    """One request with a small body (JSON) or none; raises NetworkError when no answer came."""
    parts = urlsplit(url)
    conn = _connect(parts, timeout, ssl_context)
    try:
        conn.request(
            method, _target(parts), body=body, headers={"User-Agent": USER_AGENT, **headers}
        )
        res = conn.getresponse()
        return Answer(res.status, res.headers, res.read())
    except (OSError, http.client.HTTPException) as error:
        raise NetworkError(f"{_reason(error)} ({parts.scheme}://{parts.netloc})") from error
    finally:
        conn.close()


def send_file(
    url: str,
    path: str,
    size: int,
    *,
    method: str,
    headers: Mapping[str, str],
    on_chunk: Optional[Callable[[memoryview], None]] = None,
    on_progress: Optional[Callable[[int], None]] = None,
    idle_timeout: float = 120.0,
    ssl_context: Optional[ssl.SSLContext] = None,
) -> Answer:
    """Streams the ``size`` bytes of the file at ``path`` to ``url``; answers the server's answer.

    ``on_chunk`` sees every chunk before it is sent (hashing), ``on_progress`` the bytes handed
    to the connection so far. Nothing sent or received for ``idle_timeout`` seconds is a
    NetworkError; a file that is not ``size`` bytes long (it changed) is a FileChangedError.
    """
    parts = urlsplit(url)
    conn = _connect(parts, idle_timeout, ssl_context)
    where = f"{parts.scheme}://{parts.netloc}"
    try:
        with open(path, "rb", buffering=0) as file:
            try:
                conn.connect()
            except OSError as error:
                raise NetworkError(f"{_reason(error)} ({where})") from error
            try:
                conn.putrequest(method, _target(parts), skip_accept_encoding=True)
                conn.putheader("User-Agent", USER_AGENT)
                for name, value in headers.items():
                    conn.putheader(name, value)
                conn.putheader("Content-Length", str(size))
                conn.endheaders()
                assert conn.sock is not None
                _send_body(conn.sock, file, size, on_chunk, on_progress, idle_timeout)
            except (OSError, http.client.HTTPException) as error:
                if isinstance(error, socket.timeout) or conn.sock is None:
                    raise NetworkError(f"{_reason(error)} ({where})") from error
                # The server may have answered and closed (a 400 or 413 before the whole body):
                # its answer is then waiting to be read.
                try:
                    return _read_answer(conn)
                except (OSError, http.client.HTTPException):
                    raise NetworkError(f"{_reason(error)} ({where})") from error
        try:
            return _read_answer(conn)
        except (OSError, http.client.HTTPException) as error:
            raise NetworkError(f"{_reason(error)} ({where})") from error
    finally:
        conn.close()


def _read_answer(conn: http.client.HTTPConnection) -> Answer:
    res = conn.getresponse()
    return Answer(res.status, res.headers, res.read(MAX_ANSWER_BYTES))


class _Answered(Exception):
    """The server answered before the whole body was sent."""


def _send_body(
    sock: socket.socket,
    file: io.RawIOBase,
    size: int,
    on_chunk: Optional[Callable[[memoryview], None]],
    on_progress: Optional[Callable[[int], None]],
    idle_timeout: float,
) -> None:
    buffer = bytearray(CHUNK_BYTES)
    view = memoryview(buffer)
    sent = 0
    # On a plain connection, anything readable while sending is the server's answer. Through
    # TLS the socket also turns readable for protocol records (session tickets), so there the
    # client relies on the server closing the connection after an early answer.
    watch = None if isinstance(sock, ssl.SSLSocket) else selectors.DefaultSelector()
    try:
        if watch is not None:
            watch.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
        while True:
            n = file.readinto(buffer)
            if not n:
                break
            if sent + n > size:
                raise FileChangedError(
                    f"The file grew while it was being sent (expected {size} bytes)"
                )
            chunk = view[:n]
            if on_chunk is not None:
                on_chunk(chunk)
            if watch is None:
                sock.sendall(chunk)
            else:
                try:
                    _send_watching(sock, watch, chunk, idle_timeout)
                except _Answered:
                    return
            sent += n
            if on_progress is not None:
                on_progress(sent)
        if sent != size:
            raise FileChangedError(
                f"The file shrank while it was being sent (expected {size} bytes, read {sent})"
            )
    finally:
        if watch is not None:
            watch.close()


def _send_watching(
    sock: socket.socket, watch: selectors.BaseSelector, chunk: memoryview, idle_timeout: float
) -> None:
    while chunk:
        events = watch.select(idle_timeout)
        if not events:
            raise socket.timeout(f"No progress for {round(idle_timeout)} s")
        if events[0][1] & selectors.EVENT_READ:
            raise _Answered()
        chunk = chunk[sock.send(chunk) :]
