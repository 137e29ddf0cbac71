"""Drive a page in headless Chromium from the keyboard, over the DevTools protocol on a pipe.

    python keys.py CHROMIUM URL STEPS_JSON

STEPS_JSON is a list of steps, each `["key", NAME]` (Tab, Shift+Tab, Enter, Space, Escape or
one printable character), `["type", TEXT]` or `["eval", EXPRESSION]`. Prints a JSON list with
the value of each `eval`, in order, then what the page logged to its console as
`["console", TYPE, TEXT]` entries (the browser's own log, such as a blocked script, with
its level as TYPE) and its uncaught exceptions as `["exception", TEXT]`.

The browser talks on fds 3 (commands in) and 4 (replies out), NUL-separated JSON: no port
is opened and nothing leaves the machine.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

KEYS = {
    "Tab": {"key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9},
    "Enter": {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"},
    "Space": {"key": " ", "code": "Space", "windowsVirtualKeyCode": 32, "text": " "},
    "Escape": {"key": "Escape", "code": "Escape", "windowsVirtualKeyCode": 27},
}
SHIFT = 8


class Browser:
    def __init__(self, chromium, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds():
            # Out of the way first, in case either end already is fd 3 or 4.
            r, w = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=fds, close_fds=False, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buf = b""
        self.next_id = 0
        self.session = None
        self.events = []

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
        raise TimeoutError(method)

    def read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise EOFError("the browser closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def eval(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def key(self, name):
        modifiers = 0
        if name.startswith("Shift+"):
            modifiers, name = SHIFT, name[len("Shift+"):]
        k = KEYS.get(name) or {"key": name, "text": name}
        down = dict(k, type="keyDown" if "text" in k else "rawKeyDown", modifiers=modifiers)
        self.send("Input.dispatchKeyEvent", down)
        self.send("Input.dispatchKeyEvent", {**k, "type": "keyUp", "modifiers": modifiers})

    def close(self):
        # The browser's helpers share its session: all of them go, before the profile.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def main():
    chromium, url, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        b = Browser(chromium, profile)
        try:
            target = next(t for t in b.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
            b.session = b.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
            b.send("Runtime.enable")
            b.send("Log.enable")
            b.send("Page.enable")
            b.send("Page.navigate", {"url": url})
            deadline = time.monotonic() + 20
            while b.eval("document.readyState") != "complete" or b.eval("location.href") != url:
                if time.monotonic() > deadline:
                    raise TimeoutError("the page did not load")
                time.sleep(0.05)
            out = []
            for kind, arg in steps:
                if kind == "key":
                    b.key(arg)
                elif kind == "type":
                    b.send("Input.insertText", {"text": arg})
                elif kind == "eval":
                    out.append(b.eval(arg))
                else:
                    raise ValueError(f"unknown step {kind}")
            b.send("Runtime.evaluate", {"expression": "0"})  # flush pending events
            for e in b.events:
                if e.get("method") == "Runtime.consoleAPICalled":
                    p = e["params"]
                    text = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                    out.append(["console", p["type"], text])
                elif e.get("method") == "Log.entryAdded":
                    p = e["params"]["entry"]
                    out.append(["console", p["level"], p["text"]])
                elif e.get("method") == "Runtime.exceptionThrown":
                    out.append(["exception", e["params"]["exceptionDetails"].get("text", "")])
            print(json.dumps(out))
        finally:
            b.close()


if __name__ == "__main__":
    main()
