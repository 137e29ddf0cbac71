"""Probes of the proxy's forward-proxy edge, run as the program under agentproxy (which
sets HTTPS_PROXY and the certificate bundle). Each prints one line:

- plain HTTP sent into a tunnel to a provider's host (no TLS): the proxy answers it as
  that provider's (here a miss: the cassette holds no `GET /v1/models`);
- a WebSocket upgrade agentproxy does not speak, through an intercepted tunnel: refused
  with a message;
- a client that trusts only its own roots (as one that pins certificates): the handshake
  fails, and agentproxy names pinning;
- a client with a certificate of its own: the proxy asks for none, and answers;
- 512 tunnels open at once, then one more: the last is refused. This probe limits its
  own descriptors first (RLIMIT_NOFILE), so it cannot exhaust the machine's.
"""

import http.client
import os
import resource
import socket
import ssl
import sys
import urllib.parse

PROXY = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
HOST = "api.openai.com"


def connect(timeout=10):
    """A socket to the proxy with a CONNECT to HOST:443 answered; and the status line."""
    s = socket.create_connection((PROXY.hostname, PROXY.port), timeout=timeout)
    s.sendall(f"CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    return s, head.split(b"\r\n", 1)[0].decode()


def plain_text_in_a_tunnel():
    s, status = connect()
    s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: api.openai.com\r\nConnection: close\r\n\r\n")
    answer = b""
    try:
        while b"\r\n" not in answer:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    s.close()
    line = answer.split(b"\r\n", 1)[0].decode() or "closed"
    print(f"plain text in a tunnel: {status}; then {line}")


def websocket():
    ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    conn = http.client.HTTPSConnection(PROXY.hostname, PROXY.port, context=ctx, timeout=10)
    conn.set_tunnel(HOST, 443)
    conn.request("GET", "/v1/chat/completions", headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                                  "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                                                  "Sec-WebSocket-Version": "13"})
    r = conn.getresponse()
    print(f"websocket: {r.status} {r.read().decode()}")


def pinned():
    import certifi  # the roots httpx and requests ship; the session's CA is not among them

    ctx = ssl.create_default_context(cafile=certifi.where())
    conn = http.client.HTTPSConnection(PROXY.hostname, PROXY.port, context=ctx, timeout=10)
    conn.set_tunnel(HOST, 443)
    try:
        conn.request("GET", "/v1/models")
        print(f"pinned client: {conn.getresponse().status}")
    except ssl.SSLCertVerificationError as e:
        print(f"pinned client: {e.reason}")


def client_certificate():
    """TLS with a client certificate (CLIENT_CERT, CLIENT_KEY: PEM files): the proxy asks
    for none, so the handshake completes and the request is answered."""
    ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    ctx.load_cert_chain(os.environ["CLIENT_CERT"], os.environ["CLIENT_KEY"])
    conn = http.client.HTTPSConnection(PROXY.hostname, PROXY.port, context=ctx, timeout=10)
    conn.set_tunnel(HOST, 443)
    conn.request("GET", "/v1/models")
    print(f"client certificate: {conn.getresponse().status}")


def bounded():
    resource.setrlimit(resource.RLIMIT_NOFILE, (700, 700))
    held = []
    try:
        for _ in range(512):
            s, status = connect()
            held.append(s)
            if not status.endswith("200 OK"):
                print(f"tunnel {len(held)}: {status}")
                return
        s, status = connect()
        held.append(s)
        print(f"tunnels: 512 open, the next: {status}")
    finally:
        for s in held:
            s.close()


if __name__ == "__main__":
    {"plain": plain_text_in_a_tunnel, "websocket": websocket, "pinned": pinned,
     "client_certificate": client_certificate, "bounded": bounded}[sys.argv[1]]()
