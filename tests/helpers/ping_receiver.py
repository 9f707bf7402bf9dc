#!/usr/bin/env python3
"""A healthchecks.io-style ping receiver for the tests of `clock run --ping`.

    ping_receiver.py LOG PORT_FILE [--hang]

Listens on 127.0.0.1 (a port the kernel picks, written to PORT_FILE once it
listens) and appends one JSON line per request to LOG: {"method", "path",
"query", "body", "at"} (at: seconds since the epoch when it arrived). Answers
200 "OK", as hc-ping.com does; with --hang it reads the request, logs it and
never answers (a receiver that does not reply in time). Runs until killed.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOG, PORT_FILE = sys.argv[1], sys.argv[2]
HANG = "--hang" in sys.argv[3:]
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        parts = urlsplit(self.path)
        record = {"method": self.command, "path": parts.path, "query": parts.query,
                  "body": body, "at": time.time()}
        with LOCK, open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
        if HANG:
            time.sleep(3600)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    do_GET = do_POST = do_HEAD = handle_any

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(PORT_FILE + ".tmp", "w", encoding="utf-8") as f:
    f.write(str(server.server_address[1]) + "\n")
import os  # noqa: E402
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
