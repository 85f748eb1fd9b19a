"""Per-call latency of each namespace's cheapest tool, through serve_all's Unix socket.

Starts Xvfb + LibreOffice (private pipe and profile), opens a Calc, Writer and
Impress document, serves the namespaces with ``osworld-mcp-server all --uds`` and
calls each namespace's cheapest read-only tool N times through MCPToolClient (the
path the env uses). VLC and Chromium are measured when their endpoints answer
(pass --vlc-url / --cdp-url of running instances).

    uv run python tools/bench_tools.py [-n 200]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

CHEAPEST = {
    "libreoffice_calc": ("libreoffice_calc.get_workbook_info", {}),
    "libreoffice_writer": ("libreoffice_writer.env_info", {}),
    "libreoffice_impress": ("libreoffice_impress.get_slide_count", {}),
    "os": ("os.calculator", {"expression": "6*7"}),
    "code": ("code.compare_files", None),  # filled with two small files
    "vlc": ("vlc.get_current_time", {}),
    "google_chrome": None,  # every chrome tool opens a tab; not a fair "cheapest read"
}


def wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise TimeoutError(what)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--vlc-url", default="http://127.0.0.1:8080")
    args = ap.parse_args()

    import docx
    import openpyxl
    import pptx
    from osworld_mcp_env.mcp_client import MCPToolClient
    from osworld_mcp_env.mcp_servers.uno_conn import UnoSession

    tmp = Path(tempfile.mkdtemp(prefix="bench-tools-"))
    display = next(n for n in range(400, 600) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "1280x800x24"], stderr=subprocess.DEVNULL)
    pipe = f"bench_{uuid.uuid4().hex[:8]}"
    url = f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext"
    office = subprocess.Popen(
        ["soffice", f"-env:UserInstallation=file://{tmp}/profile", "--norestore", "--nologo", "--nodefault",
         f"--accept=pipe,name={pipe};urp;StarOffice.ComponentContext"],
        env={**os.environ, "DISPLAY": f":{display}", "SAL_USE_VCLPLUGIN": "gen"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    sock = tmp / "mcp.sock"
    server = None
    try:
        wb = openpyxl.Workbook()
        wb.active.append(["a", 1])
        wb.save(tmp / "b.xlsx")
        d = docx.Document()
        d.add_paragraph("hello")
        d.save(tmp / "b.docx")
        pptx.Presentation().save(tmp / "b.pptx")
        desktop = UnoSession(url, 30).desktop()
        import uno

        for name in ("b.xlsx", "b.docx", "b.pptx"):
            desktop.loadComponentFromURL(uno.systemPathToFileUrl(str(tmp / name)), "_blank", 0, ())
        (tmp / "x.txt").write_text("a\n")
        (tmp / "y.txt").write_text("b\n")
        exe = Path(sys.executable).with_name("osworld-mcp-server")
        server = subprocess.Popen(
            [str(exe), "all", "--uds", str(sock), "--uno-url", url, "--vlc-url", args.vlc_url],
            env={**os.environ, "DISPLAY": f":{display}"},
        )
        wait(sock.exists, 30, "socket")
        rows = []
        with MCPToolClient(sock) as client:
            for ns, spec in CHEAPEST.items():
                if spec is None:
                    rows.append((ns, "-", None, None, None, "no read-only tool"))
                    continue
                name, arguments = spec
                if arguments is None:
                    arguments = {"file1": str(tmp / "x.txt"), "file2": str(tmp / "y.txt")}
                first = client.call(name, arguments)
                if not first.exec_ok:
                    rows.append((ns, name, None, None, None, first.text[:60]))
                    continue
                lat = []
                for _ in range(args.n):
                    t0 = time.perf_counter()
                    r = client.call(name, arguments)
                    lat.append((time.perf_counter() - t0) * 1000)
                    assert r.exec_ok
                lat.sort()
                rows.append((ns, name, statistics.median(lat), lat[int(0.95 * len(lat)) - 1], len(lat), ""))
        print("| namespace | tool | median ms | p95 ms | n | note |\n|---|---|---|---|---|---|")
        for ns, name, med, p95, n, note in rows:
            med_s = f"{med:.2f}" if med is not None else "-"
            p95_s = f"{p95:.2f}" if p95 is not None else "-"
            print(f"| {ns} | {name} | {med_s} | {p95_s} | {n or '-'} | {note} |")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(office.pid, 9)
        office.wait(timeout=10)
        xvfb.terminate()
        xvfb.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
