"""A transfer microbenchmark on the link in use: TCP bulk throughput and round-trip
latency between two endpoints (loopback, or two test hosts).

    python -m rung.bench.linkbench serve PORT
    python -m rung.bench.linkbench probe HOST PORT BYTES   -> JSON {bytes_per_second, rtt_seconds}
"""

from __future__ import annotations

import json
import socket
import statistics
import sys
import time

CHUNK = 1 << 16
PINGS = 50


def serve(port: int) -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    conn, _ = srv.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        for _ in range(PINGS):  # ping-pong
            conn.sendall(conn.recv(1))
        total = int(conn.recv(32).decode().strip())
        got = 0
        while got < total:
            data = conn.recv(CHUNK)
            if not data:
                break
            got += len(data)
        conn.sendall(b"k")


def probe(host: str, port: int, nbytes: int) -> dict:
    deadline = time.time() + 20
    while True:
        try:
            s = socket.create_connection((host, port), timeout=20)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with s:
        rtts = []
        for _ in range(PINGS):
            t = time.perf_counter()
            s.sendall(b"p")
            s.recv(1)
            rtts.append(time.perf_counter() - t)
        s.sendall(f"{nbytes:<32d}".encode())
        buf = b"\0" * CHUNK
        t = time.perf_counter()
        sent = 0
        while sent < nbytes:
            s.sendall(buf)
            sent += len(buf)
        s.recv(1)
        elapsed = time.perf_counter() - t
    return {"bytes_per_second": sent / elapsed, "rtt_seconds": statistics.median(rtts), "bytes": sent}


def rtt_loopback() -> float:
    """Median round trip of one byte over loopback (a server thread here)."""
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def echo():
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            for _ in range(PINGS):
                conn.sendall(conn.recv(1))

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    rtts = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(PINGS):
            start = time.perf_counter()
            s.sendall(b"p")
            s.recv(1)
            rtts.append(time.perf_counter() - start)
    t.join(timeout=5)
    srv.close()
    return statistics.median(rtts)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        from rung.bench.orphans import exit_with_parent

        exit_with_parent()  # it waits for one probe: a bench that dies first must not leave it waiting
        serve(int(sys.argv[2]))
    else:
        print(json.dumps(probe(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
