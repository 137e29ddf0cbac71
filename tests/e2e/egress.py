"""chat_tools.py, then a tool that calls a web API of its own, around the model: the
program starts a small
HTTP server on loopback (standing in for another host) and talks to it through a CONNECT
tunnel of its HTTPS_PROXY, as a client configured with a proxy does. Prints what came
back, or the error.
"""

import http.client
import http.server
import os
import sys
import threading
import urllib.parse

import chat_tools


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the other host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    if chat_tools.main() != 0:
        return 1
    server = http.server.HTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
    conn.set_tunnel("127.0.0.1", server.server_port)
    try:
        conn.request("GET", "/")
        print(f"other host: {conn.getresponse().read().decode()}")
    except OSError as e:
        print(f"other host: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
