"""Memory per idle connection: the RSS of an `agentproxy replay` daemon before and after
N kept-alive connections that each made one request (a 404, so no miss report grows the
daemon) and then stay open, idle. Loopback only.

    ulimit -n 4096; BIN=target/release/agentproxy python3 benches/idle_connections.py CASSETTE N
"""
import os, re, socket, subprocess, sys, time, json
cassette, n = sys.argv[1], int(sys.argv[2])
p = subprocess.Popen([os.environ["BIN"], "replay", "--cassette", cassette, "--repeat", "last", "-q"],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
url = None
for line in p.stdout:
    m = re.match(r"export AGENTPROXY_URL='?([^']*)'?", line.strip())
    if m: url = m.group(1); break
host, port = url.split("//")[1].split(":"); port = int(port.rstrip("/"))
body = json.dumps({"model": "m", "messages": []}).encode()
req = b"GET /nothing HTTP/1.1\r\nhost: x\r\n\r\n"
def rss():
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1])
time.sleep(0.3)
# one warm connection first, so the runtime's own buffers are in the baseline
w = socket.create_connection((host, port)); w.sendall(req); w.recv(65536)
time.sleep(0.3); before = rss()
socks = []
for _ in range(n):
    s = socket.create_connection((host, port)); s.sendall(req); s.recv(65536); socks.append(s)
time.sleep(0.5); after = rss()
print(f"{n} idle connections: RSS {before} -> {after} KB, {(after-before)*1024/n/1024:.1f} KB per connection")
p.send_signal(2); p.wait()
