"""A raw JSON-RPC peer for the MCP stand-in's hostile-input tests (tests/suite/mcp_hostile.rs),
no SDK: `mcp_raw.py server` is a stdio server (with `--inline`, one request at a time,
for the benchmark), `mcp_raw.py client SCENARIO` a host that
starts the server command in MCP_STANDIN (a JSON list), sends the scenario's lines as they
are, and prints each answer on one line (sorted by id, so concurrency does not reorder the
output).

Server methods: `slow` (answers after params.ms), `big` (a text result of params.mb
megabytes), `die` (exits without answering), `foreign` (answers with an id no request
had), `secrets` (its SERVER_TOKEN variable and its
command line, as a server that echoes its configuration would), anything else echoes its
params. A line that
is not JSON gets a JSON-RPC parse error, as a real server would answer.
"""

import json
import subprocess
import sys
import threading
import time


def server(inline=False):
    lock = threading.Lock()

    def send(msg):
        with lock:
            sys.stdout.write(json.dumps(msg) + "\n")
            sys.stdout.flush()

    def answer(msg):
        method, params, id_ = msg.get("method"), msg.get("params") or {}, msg.get("id")
        if method == "slow":
            time.sleep(params["ms"] / 1000)
        if method == "die":
            sys.stdout.flush()
            import os
            os._exit(1)
        if method == "big":
            result = {"content": [{"type": "text", "text": "x" * (params["mb"] << 20)}]}
        elif method == "secrets":
            import os
            result = {"token": os.environ.get("SERVER_TOKEN"), "argv": sys.argv[1:]}
        else:
            result = {"echo": params}
        if method == "foreign":
            id_ = f"not-{id_}"  # an answer to no request
        if id_ is not None:
            send({"jsonrpc": "2.0", "id": id_, "result": result})

    threads = []
    # Bytes, as a server reads its pipe: a line that is not UTF-8 is not JSON either.
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if inline:
            answer(msg)
            continue
        t = threading.Thread(target=answer, args=(msg,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


SCENARIOS = {
    # Three requests in flight at once, answered out of order, no initialize first.
    "interleaved": [
        '{"jsonrpc": "2.0", "id": 1, "method": "slow", "params": {"ms": 400}}',
        '{"jsonrpc": "2.0", "id": 2, "method": "slow", "params": {"ms": 0}}',
        '{"jsonrpc": "2.0", "id": "three", "method": "tools/call", "params": {"name": "t", "arguments": {}}}',
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
    ],
    "malformed": [
        '{not json',
        '{"jsonrpc": "2.0", "id": 5, "method": "ping"}',
    ],
    # A line of bytes that are not UTF-8 (written as latin-1), then a request.
    "not-utf8": [
        '\xff\xfe{"id": 4}',
        '{"jsonrpc": "2.0", "id": 5, "method": "ping"}',
    ],
    # A second request with the id of one still in flight.
    "same-id": [
        '{"jsonrpc": "2.0", "id": 1, "method": "slow", "params": {"ms": 300}}',
        '{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
    ],
    "batch": ['[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]'],
    "foreign": ['{"jsonrpc": "2.0", "id": 1, "method": "foreign"}'],
    "big": ['{"jsonrpc": "2.0", "id": 1, "method": "big", "params": {"mb": 8}}'],
    "ping-then-big": [
        '{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 2, "method": "big", "params": {"mb": 2}}',
    ],
    # Two calls of a tool a spec mocks with one result (tests/suite/mcp_hostile.rs).
    "mocked": [
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {"n": 1}}}',
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": {"n": 2}}}',
    ],
    "secrets": ['{"jsonrpc": "2.0", "id": 1, "method": "secrets"}'],
    "die": [
        '{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 2, "method": "die"}',
    ],
}


def expected_answers(lines):
    return sum(1 for l in lines if not l.startswith("{\"jsonrpc\": \"2.0\", \"method\""))


def client(scenario):
    lines = SCENARIOS[scenario]
    proc = subprocess.Popen(json.loads(__import__("os").environ["MCP_STANDIN"]),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for line in lines:
        proc.stdin.write(line.encode("latin-1") + b"\n")
        proc.stdin.flush()
        if scenario == "die":
            time.sleep(0.3)  # the ping is answered before the server dies
    answers = []
    for _ in range(expected_answers(lines)):
        line = proc.stdout.readline()
        if not line:
            break
        answers.append(json.loads(line))
    proc.stdin.close()
    proc.wait(timeout=30)
    for a in sorted(answers, key=lambda a: str(a.get("id"))):
        if scenario == "big" and "result" in a:
            a = {"id": a["id"], "text_bytes": len(a["result"]["content"][0]["text"])}
        if "error" in a:
            says = a["error"]["message"][:60] if a["error"]["code"] != -32700 else "(parse error)"
            a = {"id": a["id"], "error": a["error"]["code"], "says": says}
        print(json.dumps(a, sort_keys=True))
    print("stand-in exit:", proc.returncode)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(inline="--inline" in sys.argv)
    else:
        client(sys.argv[2])
