# Test servers for ExposeIT, run inside a sandbox: standard library only, every loop bounded by a
# deadline (the sandbox is destroyed long before it).
import base64
import hashlib
import http.server
import os
import socket
import struct
import sys
import threading
import time

MODE, PORT = sys.argv[1], int(sys.argv[2])
DEADLINE = time.time() + 300


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(("hello from the sandbox " + self.path).encode())

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.reply(("got %d bytes, sha256 %s" % (len(data), hashlib.sha256(data).hexdigest())).encode())

    def log_message(self, *args):
        pass


def websocket(conn):
    req = b""
    while b"\r\n\r\n" not in req and len(req) < 65536:
        chunk = conn.recv(4096)
        if not chunk:
            return
        req += chunk
    key = [l.split(b":", 1)[1].strip() for l in req.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    conn.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )
    f = conn.makefile("rb")
    while time.time() < DEADLINE:
        h = f.read(2)
        if len(h) < 2:
            return
        op, n = h[0] & 0x0F, h[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", f.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", f.read(8))[0]
        mask = f.read(4) if h[1] & 0x80 else b"\0\0\0\0"
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(f.read(n)))
        if op == 8:
            conn.sendall(b"\x88\x00")
            return
        if op == 1:
            out = ("echo: " + data.decode()).encode()
            hdr = bytes([0x81, len(out)]) if len(out) < 126 else bytes([0x81, 126]) + struct.pack(">H", len(out))
            conn.sendall(hdr + out)


def echo(conn):
    while time.time() < DEADLINE:
        data = conn.recv(65536)
        if not data:
            return
        conn.sendall(data)


sent = [0]


def flood(conn):
    block = b"x" * 65536
    while time.time() < DEADLINE:
        conn.sendall(block)
        sent[0] += len(block)


def report():
    while time.time() < DEADLINE:
        with open("/tmp/flood.tmp", "w") as f:
            f.write(str(sent[0]))
        os.replace("/tmp/flood.tmp", "/tmp/flood.count")
        time.sleep(0.1)


def serve(handler):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", PORT))
    srv.listen(128)
    print("listening", flush=True)
    while time.time() < DEADLINE:
        conn, _ = srv.accept()
        threading.Thread(target=lambda c=conn: (handler(c), c.close()), daemon=True).start()


if MODE == "http":
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    print("listening", flush=True)
    srv.timeout = 1
    while time.time() < DEADLINE:
        srv.handle_request()
elif MODE == "flood":
    threading.Thread(target=report, daemon=True).start()
    serve(flood)
else:
    serve({"ws": websocket, "echo": echo}[MODE])
