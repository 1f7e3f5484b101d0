#!/usr/bin/env python3
"""The download floor of bench/remote.sh: one object fetched whole from the HTTP server on
127.0.0.1 (bench/range_server.py) as ranged GETs, 8 in flight, 16 MiB each, bytes dropped (what
a plain parallel downloader does; bagscope's full scan of the same object is compared with it).

usage: ranged_download.py PORT PATH
"""

import http.client
import sys
from concurrent.futures import ThreadPoolExecutor

AUTH = "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"
PIECE = 16 << 20


def main() -> None:
    port, key = int(sys.argv[1]), sys.argv[2]
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("HEAD", f"/{key}", headers={"Authorization": AUTH})
    r = c.getresponse()
    r.read()
    size = int(r.getheader("Content-Length"))

    def get(start: int) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        end = min(start + PIECE, size) - 1
        conn.request("GET", f"/{key}", headers={"Authorization": AUTH, "Range": f"bytes={start}-{end}"})
        resp = conn.getresponse()
        n = len(resp.read())
        assert n == end - start + 1, (n, start, end)
        return n

    with ThreadPoolExecutor(8) as ex:
        total = sum(ex.map(get, range(0, size, PIECE)))
    assert total == size


if __name__ == "__main__":
    main()
