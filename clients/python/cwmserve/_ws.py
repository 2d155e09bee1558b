"""A minimal WebSocket client (RFC 6455) on the standard library: what
Session needs when the ``websockets`` package (11 or later) is not
installed. Text messages only, one at a time; pings are answered; a message
may come in fragments. The client masks every frame it sends, as the RFC
requires of clients."""

import base64
import hashlib
import os
import socket
import ssl
import struct
import urllib.parse
from typing import Optional

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class WebSocketError(Exception):
    """The connection failed, the server broke the protocol, or it closed."""


class Connection:
    """A client connection: ``send`` a text message, ``recv`` the next one,
    ``close``. Not safe for concurrent use."""

    def __init__(self, url: str, timeout: Optional[float] = None, max_size: Optional[int] = 64 << 20):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("ws", "wss"):
            raise WebSocketError(f"{url}: not a ws:// or wss:// URL")
        port = u.port or (443 if u.scheme == "wss" else 80)
        sock = socket.create_connection((u.hostname, port), timeout=timeout)
        if u.scheme == "wss":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=u.hostname)
        self._sock = sock
        self._buf = b""
        self._max = max_size if max_size is not None else 1 << 62
        self._closed = False
        path = (u.path or "/") + ("?" + u.query if u.query else "")
        key = base64.b64encode(os.urandom(16)).decode()
        host = u.hostname if u.port is None else f"{u.hostname}:{u.port}"
        req = (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        sock.sendall(req.encode())
        head = self._read_until(b"\r\n\r\n", 64 << 10).decode("latin-1")
        lines = head.split("\r\n")
        status = lines[0].split(" ", 2)
        if len(status) < 2 or status[1] != "101":
            body = self._buf[:500].decode("utf-8", "replace")
            raise WebSocketError(f"{url}: the server refused the WebSocket: {lines[0]} {body}".strip())
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        want = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
        if headers.get("sec-websocket-accept") != want:
            raise WebSocketError(f"{url}: bad Sec-WebSocket-Accept in the handshake")

    def _read_until(self, sep: bytes, limit: int) -> bytes:
        while sep not in self._buf:
            if len(self._buf) > limit:
                raise WebSocketError("handshake reply too long")
            self._fill()
        head, _, self._buf = self._buf.partition(sep)
        return head

    def _fill(self) -> None:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise WebSocketError("the server closed the connection")
        self._buf += chunk

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill()
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        self._sock.sendall(head + mask + _mask(payload, mask))

    def _recv_frame(self):
        b0, b1 = self._read(2)
        fin, opcode, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
        if b1 & 0x80:
            raise WebSocketError("the server sent a masked frame")
        if n == 126:
            n = struct.unpack("!H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._read(8))[0]
        if n > self._max:
            raise WebSocketError(f"a frame of {n} bytes is larger than {self._max}")
        return bool(fin), opcode, self._read(n)

    def send(self, text: str) -> None:
        if self._closed:
            raise WebSocketError("the connection is closed")
        self._send_frame(OP_TEXT, text.encode("utf-8"))

    def recv(self) -> str:
        parts = []
        size = 0
        while True:
            fin, opcode, payload = self._recv_frame()
            if opcode == OP_PING:
                self._send_frame(OP_PONG, payload)
                continue
            if opcode == OP_PONG:
                continue
            if opcode == OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                reason = payload[2:].decode("utf-8", "replace")
                self._closed = True
                try:
                    self._send_frame(OP_CLOSE, payload[:2])
                except OSError:
                    pass
                raise WebSocketError(f"the server closed the WebSocket ({code}{': ' + reason if reason else ''})")
            if opcode not in (OP_TEXT, OP_BINARY, OP_CONT) or (opcode == OP_CONT) != bool(parts):
                raise WebSocketError(f"unexpected frame (opcode {opcode})")
            parts.append(payload)
            size += len(payload)
            if size > self._max:
                raise WebSocketError(f"a message larger than {self._max} bytes")
            if fin:
                return b"".join(parts).decode("utf-8")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._send_frame(OP_CLOSE, struct.pack("!H", 1000))
            except OSError:
                pass
        self._sock.close()


def _mask(payload: bytes, mask: bytes) -> bytes:
    """XORs payload with the repeated 4-byte mask, a word at a time."""
    n = len(payload)
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")


def connect(url: str, timeout: Optional[float] = None, max_size: Optional[int] = 64 << 20) -> Connection:
    """Opens a WebSocket to url (ws:// or wss://); max_size bounds a message
    (None: no bound)."""
    return Connection(url, timeout=timeout, max_size=max_size)
