"""A tool's HTTPS web API around the model: a server the test started on the host's
loopback at PORT (standing in for another host), reached through a CONNECT tunnel of
HTTPS_PROXY and trusting SSL_CERT_FILE, as a client configured with a proxy does. Prints
what came back, or the error.

Usage: other_https.py PORT
"""

import http.client
import os
import ssl
import sys
import urllib.parse


def main():
    port = int(sys.argv[1])
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    context = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    conn = http.client.HTTPSConnection(
        proxy.hostname, proxy.port, timeout=10, context=context
    )
    conn.set_tunnel("127.0.0.1", port)
    try:
        conn.request("GET", "/forecast?city=Paris")
        r = conn.getresponse()
        print(f"forecast: {r.status} {r.read().decode()}")
    except OSError as e:
        print(f"forecast: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
