"""What internet mode costs: desktop start, one request's latency and a download's throughput.

A local web server on the host's loopback stands for the website (``hosts`` maps
``www.site.test`` to it). Requests are made inside the desktop by curl, as the
desktop user, through the relay and the host proxy (plain HTTP, and HTTPS-style
``CONNECT`` tunnels); the baseline is the same curl against the same server from the
host, without proxy or sandbox.

    uv run python tools/bench_network.py [--starts 3] [--requests 30] [--mb 64]
"""

from __future__ import annotations

import argparse
import http.server
import statistics
import subprocess
import threading
import time

from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig

CURL_TIMES = "curl -s -o /dev/null -w '%{time_total} %{speed_download}\\n'"


def serve(payload_mb: int) -> http.server.ThreadingHTTPServer:
    blob = b"x" * (payload_mb * 2**20)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = blob if self.path == "/big" else b"ok\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_times(starts: int, network: object) -> list[float]:
    times = []
    for _ in range(starts):
        began = time.perf_counter()
        desktop = LocalDesktop(LocalDesktopConfig(libreoffice_template=False, network=network))  # type: ignore[arg-type]
        times.append(time.perf_counter() - began)
        desktop.close()
    return times


def curl_inside(desktop: LocalDesktop, flags: str, url: str, n: int) -> list[tuple[float, float]]:
    script = f"for i in $(seq {n}); do {CURL_TIMES} {flags} {url}; done"
    out = desktop.execute(script, shell=True, timeout=600).output
    return [(float(t), float(s)) for t, s in (line.split() for line in out.splitlines())]


def curl_host(url: str, n: int) -> list[tuple[float, float]]:
    out = subprocess.run(
        ["bash", "-c", f"for i in $(seq {n}); do {CURL_TIMES} --noproxy '*' {url}; done"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [(float(t), float(s)) for t, s in (line.split() for line in out.splitlines())]


def main() -> None:
    """Prints the start, latency and throughput table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--mb", type=int, default=64)
    args = parser.parse_args()
    server = serve(args.mb)
    port = server.server_address[1]
    network = {"mode": "internet", "hosts": {"www.site.test": f"127.0.0.1:{port}"}}
    loopback = start_times(args.starts, "loopback")
    internet = start_times(args.starts, network)
    print(f"{'desktop start (median of ' + str(args.starts) + ')':<40}{'s':>10}")
    print(f"{'  loopback':<40}{statistics.median(loopback):>10.2f}")
    print(f"{'  internet':<40}{statistics.median(internet):>10.2f}")
    desktop = LocalDesktop(LocalDesktopConfig(libreoffice_template=False, network=network))
    try:
        rows = {
            "host, direct": (curl_host(f"http://127.0.0.1:{port}/", args.requests),
                             curl_host(f"http://127.0.0.1:{port}/big", 3)),
            "desktop, forwarded HTTP": (curl_inside(desktop, "", "http://www.site.test/", args.requests),
                                        curl_inside(desktop, "", "http://www.site.test/big", 3)),
            "desktop, CONNECT tunnel": (curl_inside(desktop, "-p", "http://www.site.test/", args.requests),
                                        curl_inside(desktop, "-p", "http://www.site.test/big", 3)),
        }  # fmt: skip
    finally:
        desktop.close()
        server.shutdown()
    print(f"\n{'request':<28}{'p50 ms':>10}{'p95 ms':>10}{f'{args.mb} MiB MB/s':>16}")
    for name, (small, big) in rows.items():
        latencies = sorted(t * 1000 for t, _ in small)
        p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
        speed = statistics.median(s for _, s in big) / 1e6
        print(f"{name:<28}{statistics.median(latencies):>10.1f}{p95:>10.1f}{speed:>16.0f}")


if __name__ == "__main__":
    main()
