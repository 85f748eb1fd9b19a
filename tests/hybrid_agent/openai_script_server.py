"""A real OpenAI-compatible chat-completions server process that answers from a fixed script.

Run as ``python openai_script_server.py PORT_FILE SCRIPT_JSON``: it binds a free loopback
port, writes it to PORT_FILE, and answers POST /v1/chat/completions with the script's
entries in order (``{"status": 503}`` entries fail). Every request body is appended to
PORT_FILE + ".requests" so the test can check what the client sent.
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

with open(sys.argv[2]) as script_file:
    script = json.load(script_file)
port_file = sys.argv[1]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(port_file + ".requests", "a") as f:
            f.write(body.decode() + "\n")
        entry = script.pop(0) if script else {"status": 500}
        status = entry.get("status", 200)
        payload = json.dumps(entry.get("json", {"error": "scripted failure"})).encode()
        self.send_response(status if self.path == "/v1/chat/completions" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
