"""What the Python fakes of tests/e2e (fake_bedrock.py, fake_vertex.py) share: a
handler that answers as HTTP/1.1 with a length, and serving on a free loopback port until
stdin closes, the port printed as `port N` (what tests/support/fake_cloud.rs reads)."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Answering(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, content_type, body):
        """Answer with `body`: bytes as they are, text as UTF-8, any other value as JSON."""
        if isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(handler):
    """Serve `handler` until stdin closes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"port {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()
