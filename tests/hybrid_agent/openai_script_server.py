"""A real HTTP API server process that answers from a fixed script (chat completions by default).

Run as ``python openai_script_server.py PORT_FILE SCRIPT_JSON [PATH [KEY]]``: it binds a free
loopback port, writes it to PORT_FILE, and answers POST PATH (``/v1/chat/completions`` by
default; ``/v1/messages`` for the Anthropic Messages API, ``/v1/responses`` for the OpenAI
Responses API; a query string is ignored) with the script's entries in order. With KEY,
a request whose ``x-api-key`` or ``Authorization: Bearer`` is not KEY is refused with 401
and an authentication-error body, consuming no entry. An entry may set:

* ``status`` (default 200) and ``json`` (the body; a scripted error body by default);
* ``headers``: extra response headers (``{"Retry-After": "1"}``);
* ``raw``: a body sent as-is instead of ``json`` (invalid JSON);
* ``torn``: announce a Content-Length larger than the body, send the body, then close
  (a reply torn mid-way, as a proxy or server crash leaves it);
* ``hang``: never answer (the client's timeout must end the call).

Every request is appended to PORT_FILE + ".requests" as one JSON line
``{"path", "headers", "body"}`` *before* it is answered, so the test can check what
the client sent and how many attempts it made.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

with open(sys.argv[2]) as script_file:
    script = json.load(script_file)
port_file = sys.argv[1]
served = sys.argv[3] if len(sys.argv) > 3 else "/v1/chat/completions"
key = sys.argv[4] if len(sys.argv) > 4 else None
never = threading.Event()
REFUSED = {"type": "error", "error": {"type": "authentication_error", "message": "invalid api key"}}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        record = {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
        with open(port_file + ".requests", "a") as f:
            f.write(json.dumps(record) + "\n")
        sent = self.headers.get("x-api-key") or self.headers.get("Authorization", "").removeprefix("Bearer ")
        entry = {"status": 401, "json": REFUSED} if key is not None and sent != key else None
        entry = entry or (script.pop(0) if script else {"status": 500})
        if entry.get("hang"):
            never.wait()
        status = entry.get("status", 200) if self.path.split("?", 1)[0] == served else 404
        if "raw" in entry:
            payload = entry["raw"].encode()
        else:
            payload = json.dumps(entry.get("json", {"error": {"message": "scripted failure"}})).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload) + (1000 if entry.get("torn") else 0)))
        for name, value in entry.get("headers", {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
