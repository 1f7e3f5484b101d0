#!/usr/bin/env python3
"""A static file server with byte ranges (what a web server or CDN in front of a bucket gives),
for timing remote reads in bench/remote.sh without a store whose cost per request grows with
the object (moto reads the whole object for every range). GET and HEAD of the files under
ROOT; `Range: bytes=a-b`, `a-`, `-n`; ETag and Last-Modified; threaded; 127.0.0.1 only.
With LINK_MBPS, every answer's bytes share one link of that many MB/s (a token bucket over all
connections), so that a read can be timed where the network, not the CPU, is what limits it.

usage: range_server.py ROOT PORT [LINK_MBPS]
"""

import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.abspath(sys.argv[1])
LINK_BYTES_PER_S = float(sys.argv[3]) * 1e6 if len(sys.argv) > 3 else 0.0
PIECE = 256 << 10 if LINK_BYTES_PER_S else 1 << 20
_link = threading.Lock()
_link_free_at = [0.0]


def link_wait(n: int) -> None:
    """Waits until the shared link has carried `n` more bytes (nothing without a link rate)."""
    if not LINK_BYTES_PER_S:
        return
    with _link:
        now = time.monotonic()
        done = max(_link_free_at[0], now) + n / LINK_BYTES_PER_S
        _link_free_at[0] = done
    time.sleep(max(0.0, done - time.monotonic()))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_HEAD(self) -> None:
        self.serve(head=True)

    def do_GET(self) -> None:
        self.serve(head=False)

    def serve(self, head: bool) -> None:
        path = os.path.abspath(os.path.join(ROOT, self.path.lstrip("/").split("?")[0]))
        if not path.startswith(ROOT + os.sep) or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        st = os.stat(path)
        size = st.st_size
        start, end, status = 0, size, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            if a == "":
                start, end = max(0, size - int(b)), size
            else:
                start = int(a)
                end = min(int(b) + 1, size) if b else size
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", f'"{size:x}-{int(st.st_mtime_ns):x}"')
        self.send_header("Last-Modified", self.date_time_string(int(st.st_mtime)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if head:
            return
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start
            while left > 0:
                chunk = f.read(min(left, PIECE))
                if not chunk:
                    break
                link_wait(len(chunk))
                self.wfile.write(chunk)
                left -= len(chunk)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
