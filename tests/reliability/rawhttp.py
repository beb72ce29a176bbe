"""Raw-socket HTTP/1.1 clients for what httpx cannot do: send a body slowly
and notice the response arriving before the body is finished."""
from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass


@dataclass
class SlowSend:
    status: int | None          # None: no response before the deadline
    sent_bytes: int             # body bytes sent before the response arrived
    offered_bytes: int          # body bytes we would have sent in total
    seconds: float              # from the headers to the first response byte
    finished_sending: bool


def _status(head: bytes) -> int | None:
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def slow_post(port: int, *, path: str = "/ask", chunk: bytes, chunks: int, gap_s: float,
              chunked: bool, content_length: int | None = None, deadline_s: float = 60.0) -> SlowSend:
    """POST a body of `chunks` × `chunk`, `gap_s` apart, stopping as soon as a
    response starts to arrive (or the server closes the connection)."""
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json"]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {content_length or len(chunk) * chunks}")
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    started = time.monotonic()
    sent = 0
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        for i in range(chunks):
            ready, _, _ = select.select([sock], [], [], gap_s if i else 0)
            if ready:
                break
            frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        else:
            if chunked:
                try:
                    sock.sendall(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass
        finished = sent == len(chunk) * chunks
        remaining = deadline_s - (time.monotonic() - started)
        ready, _, _ = select.select([sock], [], [], max(0.0, remaining))
        if not ready:
            return SlowSend(None, sent, len(chunk) * chunks, time.monotonic() - started, finished)
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
        return SlowSend(_status(data), sent, len(chunk) * chunks, time.monotonic() - started, finished)
    finally:
        sock.close()
