"""chat_tools.py, then a tool that calls a web API of its own, around the model: a server
the test started on the host's loopback at PORT (standing in for another host), reached
through a CONNECT tunnel of HTTPS_PROXY as a client configured with a proxy does, with
plain HTTP through HTTP_PROXY, then directly, as a client that ignores the proxy does. Prints what came back, or the error.

Usage: egress.py PORT
"""

import http.client
import os
import socket
import sys
import urllib.parse

import chat_tools


def main():
    if chat_tools.main() != 0:
        return 1
    port = int(sys.argv[1])
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
    conn.set_tunnel("127.0.0.1", port)
    code = 0
    try:
        conn.request("GET", "/")
        print(f"through the proxy: {conn.getresponse().read().decode()}")
    except OSError as e:
        print(f"through the proxy: {e}")
        code = 1
    # Plain HTTP through HTTP_PROXY: the request in absolute form, to the proxy.
    proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
    conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
    try:
        conn.request("GET", f"http://127.0.0.1:{port}/")
        r = conn.getresponse()
        print(f"plain through the proxy: {r.status} {r.read().decode()}")
    except OSError as e:
        print(f"plain through the proxy: {e}")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            print(f"directly: {s.recv(1024).decode().splitlines()[-1]}")
    except OSError as e:
        print(f"directly: {e.strerror or e}")
    return code


if __name__ == "__main__":
    sys.exit(main())
