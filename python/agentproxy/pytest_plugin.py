"""The pytest plugin: a cassette per test, recorded and replayed by one agentproxy.

One `agentproxy serve` runs per pytest session (per xdist worker). Its URL is put into
OPENAI_BASE_URL, OPENAI_API_BASE, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL and
AGENTPROXY_URL before collection, so SDK clients made at import time go through it. Each
test that uses the `agentproxy` fixture (or carries `@pytest.mark.agentproxy`) switches
the proxy to its own cassette and mode, and reads back what the model was asked and said.
What the run tells at its end (recordings not used, trajectories changed by re-recording)
is gathered from every worker by the xdist controller. docs/pytest.md documents every
option.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agentproxy import find_binary

MODES = ("replay", "record", "auto", "update")
_MISSING = object()


def pytest_addoption(parser):
    group = parser.getgroup("agentproxy", "record and replay model traffic (agentproxy)")
    group.addoption("--agentproxy-mode", choices=MODES, default=None,
                    help="replay, record, auto (record what has no cassette) or update; "
                         "default auto, or replay when CI is set")
    group.addoption("--agentproxy-upstream", action="append", default=None,
                    metavar="[PROVIDER=]URL",
                    help="upstream a provider records from: URL for the OpenAI-compatible "
                         "API, PROVIDER=URL for any provider agentproxy record --help lists "
                         "(agentproxy serve checks it); repeat for several (default: each "
                         "provider's AGENTPROXY_*_UPSTREAM variable)")
    group.addoption("--agentproxy-anthropic-upstream", default=None,
                    help="the same as --agentproxy-upstream anthropic=URL")
    group.addoption("--agentproxy-html", default=None, metavar="FILE",
                    help="write the run's agentproxy tests as one HTML page (failures first, "
                         "each test's trajectory), as agentproxy test --html does")
    parser.addini("agentproxy_mode", "default --agentproxy-mode", default=None)
    parser.addini("agentproxy_upstream", "default --agentproxy-upstream, one per line",
                  type="linelist", default=[])
    parser.addini("agentproxy_anthropic_upstream", "default --agentproxy-anthropic-upstream",
                  default=None)
    parser.addini("agentproxy_match",
                  "tolerances of every test, the `match:` block of a spec as JSON "
                  '(e.g. {"ignore": ["/user"]}); a marker\'s match= adds to it', default=None)
    parser.addini("agentproxy_cassette_dir",
                  "where cassettes go, relative to the rootdir "
                  "(default: cassettes/ next to each test file)", default=None)


def _setting(config, option, ini, env=None):
    value = config.getoption(option)
    if value is None:
        value = config.getini(ini) or None
    if value is None and env:
        value = os.environ.get(env, "").strip() or None
    return value


def _serve_mode_args(config):
    """`agentproxy serve`'s arguments for the mode the session was asked for: serve decides
    the session's mode (replay under CI, auto elsewhere, when none is asked) and, under CI,
    refuses a recording mode that only the ini file asks for."""
    mode = config.getoption("agentproxy_mode")
    if mode is not None:
        return ["--mode", mode]
    mode = config.getini("agentproxy_mode") or None
    if mode is None:
        return []
    if mode not in MODES:
        raise pytest.UsageError(f"agentproxy_mode = {mode!r}: expected one of {', '.join(MODES)}")
    return ["--mode", mode, "--mode-from", "agentproxy_mode in the ini file"]


# The version of `agentproxy serve`'s control protocol this plugin speaks (docs/pytest.md).
PROTOCOL = 4
# What serve's control endpoint asks every request to present, and where the plugin finds it.
SECRET_HEADER = "x-agentproxy-secret"
SECRET_VAR = "AGENTPROXY_SECRET"
# Where serve writes each ended test for the run's HTML report (--agentproxy-html).
CASES_VAR = "AGENTPROXY_CASES_DIR"
# A control request waits this long at most (seconds): ending a test drains its exchanges,
# and a stuck serve must fail the test, not hang the session. Serve is given as long to
# exit at the session's end. AGENTPROXY_CONTROL_TIMEOUT sets another, to test a stuck serve.
CONTROL_TIMEOUT = float(os.environ.get("AGENTPROXY_CONTROL_TIMEOUT") or 120)
# Control requests go straight to serve on loopback, whatever HTTP_PROXY says.
_LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _Proxy:
    """The session's `agentproxy serve` process and its control endpoint."""

    def __init__(self, config):
        binary = os.environ.get("AGENTPROXY_BIN") or find_binary()
        # Cassettes live under the rootdir: serve refuses any other path.
        args = [binary, "serve", "--root", str(config.rootpath), *_serve_mode_args(config)]
        # The binary reads each provider's AGENTPROXY_*_UPSTREAM itself.
        upstreams = config.getoption("agentproxy_upstream") or config.getini("agentproxy_upstream")
        anthropic = _setting(config, "agentproxy_anthropic_upstream",
                             "agentproxy_anthropic_upstream")
        if anthropic:
            upstreams = [*upstreams, f"anthropic={anthropic}"]
        for value in upstreams:
            args += ["--upstream", value]
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            raise pytest.UsageError(f"agentproxy serve exited with {code} before listening "
                                    "(its message is above)")
        hello = json.loads(line)
        spoken = hello.get("protocol")
        if spoken != PROTOCOL:
            self.process.stdin.close()
            self.process.wait(timeout=60)
            spoken = f"version {spoken}" if spoken else "no version (a release older than this plugin)"
            raise pytest.UsageError(
                f"{binary} speaks control protocol {spoken}; this plugin speaks version "
                f"{PROTOCOL}: install the agentproxy wheel of one release (it carries its "
                f"binary), or point AGENTPROXY_BIN at a binary of this plugin's release")
        self.url = hello["url"]
        self.env = hello["env"]
        # The session's mode, as serve decided it.
        self.mode = hello["mode"]
        # Presented with every control request; the programs get it through the
        # environment, for the MCP stand-ins they start.
        self.secret = self.env[SECRET_VAR]
        # The control request serve left unanswered, once it left one: it is stuck (or
        # stopped), and each test after that would wait as long again.
        self.stuck = None

    def control(self, method, path, body=None):
        __tracebackhide__ = True
        if self.stuck:
            raise AgentProxyError(f"{self.stuck} earlier in this session, so it was ended: "
                                  "every test that uses agentproxy after that fails at once")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}/_agentproxy/{path}", data=data, method=method,
            headers={"content-type": "application/json", SECRET_HEADER: self.secret})
        try:
            with _LOOPBACK.open(request, timeout=CONTROL_TIMEOUT) as response:
                return json.load(response)
        except urllib.error.HTTPError as e:
            message = json.load(e).get("error", str(e))
            raise AgentProxyError(message) from None
        except (TimeoutError, urllib.error.URLError) as e:
            if isinstance(e, TimeoutError) or isinstance(getattr(e, "reason", None), TimeoutError):
                # Ended, so that a request the programs still send fails at once instead of
                # hanging as this one did.
                self.process.kill()
                self.stuck = (f"agentproxy serve did not answer {method} /_agentproxy/{path} "
                              f"within {CONTROL_TIMEOUT:g} s")
                raise AgentProxyError(f"{self.stuck}, so it was ended: every test that uses "
                                      "agentproxy after this one fails at once") from None
            raise AgentProxyError(
                f"agentproxy serve did not answer {method} /_agentproxy/{path}: {e}") from None

    def stop(self):
        """Stop serve: it writes what a test still active recorded, then exits; one that
        does not exit in time (stuck, stopped) is killed rather than waited for."""
        self.process.stdin.close()
        try:
            self.process.wait(timeout=CONTROL_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            print(f"agentproxy: serve did not exit within {CONTROL_TIMEOUT:g} s of the end of "
                  "the session: killed", file=sys.stderr)


class AgentProxyError(Exception):
    """The proxy refused a control request (bad mode, no cassette to replay, …)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "agentproxy(cassette=None, mode=None, match=None): this test's cassette, "
                   "mode and tolerances (a spec's `match:` block)")
    if hasattr(config, "_agentproxy") or config.option.help:
        return
    # Told at the end of the run, each as [nodeid, what]: the recordings a test did not use
    # (a line each), and the {"verdict", "diff"} of each re-recorded test whose trajectory
    # changed. Plain lists, for xdist to send.
    config._agentproxy_told = {"unused": [], "drifted": []}
    html = config.getoption("agentproxy_html")
    if html and not hasattr(config, "workerinput"):
        # Every serve of the run (this process's, each xdist worker's, which inherit the
        # environment) writes each test that ends into one directory, rendered at the end.
        config._agentproxy_html = (Path(html).resolve(), tempfile.mkdtemp(prefix="agentproxy-cases-"))
        os.environ[CASES_VAR] = config._agentproxy_html[1]
    # Under pytest-xdist the workers run the tests, each with its own proxy.
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    proxy = _Proxy(config)
    config._agentproxy = proxy
    # Before collection: clients made at import time read these.
    for name, value in proxy.env.items():
        os.environ[name] = value


def pytest_unconfigure(config):
    proxy = getattr(config, "_agentproxy", None)
    if proxy is not None:
        proxy.stop()
        del config._agentproxy
    html = getattr(config, "_agentproxy_html", None)
    if html is not None:
        page, cases = html
        binary = os.environ.get("AGENTPROXY_BIN") or find_binary()
        rendered = subprocess.run([binary, "report", "cases", cases, "--report", "html", "-o",
                                   str(page)], capture_output=True, text=True)
        shutil.rmtree(cases, ignore_errors=True)
        if rendered.returncode != 0:
            print(f"agentproxy: the HTML report {page} was not written: {rendered.stderr.strip()}",
                  file=sys.stderr)


def pytest_collection_modifyitems(config, items):
    # A marked test gets the fixture (and so its cassette) without asking for it.
    for item in items:
        if item.get_closest_marker("agentproxy") and "agentproxy" not in item.fixturenames:
            item.fixturenames.append("agentproxy")
    proxy = getattr(config, "_agentproxy", None)
    if proxy is None:
        return
    # Two tests on one cassette would record over each other and replay the wrong one: a
    # cassette named after the test must be its own (one two tests name is shared on
    # purpose). Serve names the files: it is asked for all of them at once.
    tests = [item for item in items if "agentproxy" in getattr(item, "fixturenames", ())]
    given = [_cassette(item, item.get_closest_marker("agentproxy")) for item in tests]
    derived = [g for g in given if "cassette_dir" in g]
    named = proxy.control("POST", "cassettes", {"tests": [
        {"dir": g["cassette_dir"], "name": g["cassette_name"]} for g in derived]})["cassettes"]
    paths = iter(named)
    seen = {}
    for item, g in zip(tests, given):
        explicit = "cassette" in g
        path = Path(g["cassette"] if explicit else next(paths)).resolve()
        first = seen.setdefault(path, (item.nodeid, explicit))
        if first[0] != item.nodeid and not (explicit and first[1]):
            raise pytest.UsageError(
                f"tests {first[0]} and {item.nodeid} would share the cassette {path}; give one "
                "a cassette of its own with @pytest.mark.agentproxy(cassette=...), or rename it")


def _cassette(item, marker):
    """The test's cassette as its start request gives it: the marker's path, else the
    directory it goes in and the test's name, which serve makes the file's name of."""
    explicit = marker.kwargs.get("cassette") if marker else None
    if explicit:
        path = Path(explicit)
        return {"cassette": str(path if path.is_absolute() else Path(item.fspath).parent / path)}
    module = Path(item.fspath)
    configured = item.config.getini("agentproxy_cassette_dir")
    base = Path(item.config.rootpath) / configured if configured else module.parent / "cassettes"
    return {"cassette_dir": str(base / module.stem), "cassette_name": item.name}


def _match(item, marker):
    """The test's tolerances: the ini's `agentproxy_match`, then its marker's `match=`."""
    rules = {"ignore": [], "holes": []}
    ini = item.config.getini("agentproxy_match")
    for source, block in (("agentproxy_match in the ini file", ini),
                          ("the marker's match=", marker.kwargs.get("match") if marker else None)):
        if isinstance(block, str):
            try:
                block = json.loads(block)
            except json.JSONDecodeError as e:
                raise pytest.UsageError(f"{source} is not JSON: {e}") from None
        if block is None:
            continue
        if not isinstance(block, dict):
            raise pytest.UsageError(f"{source} must be a mapping (a spec's `match:` block)")
        for key, value in block.items():
            if key in rules and isinstance(value, list):
                rules[key].extend(value)
            else:
                rules[key] = value
    return {k: v for k, v in rules.items() if v != []} or None


class ToolCall:
    """A tool call the model asked for."""

    def __init__(self, raw):
        self.name = raw["name"]
        self.arguments = raw["arguments"]

    def __repr__(self):
        return f"ToolCall({self.name!r}, {self.arguments!r})"


class AgentProxy:
    """The `agentproxy` fixture: this test's cassette, its trajectory, and its mocks."""

    def __init__(self, proxy, cassette, mode):
        self._proxy = proxy
        self.cassette = cassette
        self.mode = mode
        self._mocks = {}

    def _trajectory(self):
        __tracebackhide__ = True
        return self._proxy.control("GET", "test")

    def calls(self, name=None):
        """The tool calls the model asked for so far, optionally only those to `name`."""
        __tracebackhide__ = True
        calls = [ToolCall(c) for c in self._trajectory()["calls"]]
        return [c for c in calls if name is None or c.name == name]

    def executions(self):
        """The tool calls MCP servers executed so far, each {"server", "tool", "arguments"}."""
        __tracebackhide__ = True
        return self._trajectory()["executions"]

    def failures(self, **expect):
        """What fails of a spec's `expect:` block (calls, order, strict, allow, never,
        executed, not_executed, count, requests, reply) against the test so far, as the
        runner words it; an empty list when it all holds."""
        __tracebackhide__ = True
        return self._proxy.control("POST", "test/check", expect)["failures"]

    def assert_expect(self, **expect):
        """A spec's `expect:` block holds (see `failures`)."""
        __tracebackhide__ = True
        failures = self.failures(**expect)
        if failures:
            raise AssertionError("\n".join(failures))

    def assert_called(self, name, **arguments):
        """Some call to `name` has arguments matching these: bare values as a spec's
        (partial), or its matchers ({"regex": …}, {"contains": …}, …)."""
        __tracebackhide__ = True
        self.assert_expect(calls=[{name: arguments or None}])

    def assert_not_called(self, name, **arguments):
        """No call to `name` (with arguments matching these, when given)."""
        __tracebackhide__ = True
        self.assert_expect(never=[{name: arguments or None}])

    @property
    def reply(self):
        """The last assistant text of the test, or None."""
        __tracebackhide__ = True
        return self._trajectory()["reply"]

    @property
    def requests(self):
        """The requests the proxy answered in this test, in order: each {"method", "path",
        "route", "body"} (secrets redacted)."""
        __tracebackhide__ = True
        return self._trajectory()["requests"]

    def mock_tool(self, name, result=_MISSING, results=None, when=None):
        """Tell the model `result` for calls to `name` (only those whose arguments match
        `when`, when given), or the n-th of `results` for the n-th call; as a spec's
        `tools:`. Call it before the agent's first model request."""
        if (result is _MISSING) == (results is None):
            raise TypeError("mock_tool needs exactly one of result= or results=")
        if results is not None:
            if when is not None:
                raise TypeError("results= takes no when=; give one mock_tool per rule")
            mock = {"results": list(results)}
        elif when is None and name not in self._mocks:
            mock = {"result": result}
        else:
            rules = self._mocks.get(name, {}).get("rules")
            if rules is None:
                fixed = self._mocks.get(name, {})
                rules = [{"when": None, "result": fixed["result"]}] if "result" in fixed else []
            rule = {"when": when, "result": result}
            # A rule without `when` answers everything left: it goes last.
            rules = [r for r in rules if r["when"] is not None] + [rule] + \
                [r for r in rules if r["when"] is None]
            mock = {"rules": rules}
        self._mocks[name] = mock
        self._proxy.control("PUT", "test/mocks", {"mocks": self._mocks})


@pytest.fixture
def agentproxy(request):
    proxy = getattr(request.config, "_agentproxy", None)
    if proxy is None:
        pytest.skip("agentproxy is not running in this session")
    marker = request.node.get_closest_marker("agentproxy")
    # None: the session's. Under CI a session that replays replays every test (serve's
    # rule: in CI only the command line chooses a mode that records).
    mode = marker.kwargs.get("mode") if marker else None
    start = {"protocol": PROTOCOL, "name": request.node.nodeid,
             **_cassette(request.node, marker), "mode": mode, "match": _match(request.node, marker), "runner": "pytest",
             "rerecord": f"pytest {shlex.quote(request.node.nodeid)} --agentproxy-mode=record"}
    try:
        started = proxy.control("POST", "test", start)
    except AgentProxyError as e:
        # No cassette to replay, a bad tolerance: the test fails saying so, in a line
        # (pytest_runtest_call), instead of erroring in its setup.
        request.node._agentproxy_refused = f"agentproxy: {e}"
        yield None
        return
    fixture = AgentProxy(proxy, Path(started["cassette"]), started["mode"])
    request.node._agentproxy_active = True
    yield fixture
    if getattr(request.node, "_agentproxy_active", False):
        _end(request.node)


def _end(item, raised=None):
    """End the item's test at the proxy (`raised`: what failed it in its own code); the
    near-miss reports of its misses, if any."""
    item._agentproxy_active = False
    # A skip or an expected failure is no failure of the test.
    if raised is None or isinstance(raised, (pytest.skip.Exception, pytest.xfail.Exception)):
        failure = None
    else:
        failure = f"{type(raised).__name__}: {raised}".rstrip(": ")
    ended = item.config._agentproxy.control("DELETE", "test", {"failure": failure})
    told = item.config._agentproxy_told
    # After a miss the program did not get the answers that would have used them.
    if not ended["misses"]:
        told["unused"].extend([item.nodeid, u] for u in ended["unused"])
    drift = ended.get("trajectory")
    if drift and drift["verdict"] != "identical":
        told["drifted"].append([item.nodeid, drift])
    # The verdict is serve's: what fails the test besides its own code, to show.
    return ended["failures"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test whose model request missed its cassette fails with the near-miss report,
    whatever the SDK raised about it."""
    refused = getattr(item, "_agentproxy_refused", None)
    if refused:
        _fail(item, refused)
    try:
        result = yield
        raised = None
    except BaseException as e:  # noqa: BLE001 - re-raised below unless a miss explains it
        result, raised = None, e
    if getattr(item, "_agentproxy_active", False):
        try:
            problems = _end(item, raised)
        except AgentProxyError as e:
            problems = [str(e)]
        if problems:
            _fail(item, "agentproxy:\n" + "\n".join(problems))
    if raised is not None:
        raise raised
    return result


def _fail(item, report):
    """Fail the item with the plugin's `report`, shown whole and without a traceback."""
    __tracebackhide__ = True
    item._agentproxy_failure = pytest.fail.Exception(report, pytrace=False)
    raise item._agentproxy_failure


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    failure = getattr(item, "_agentproxy_failure", None)
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and call.excinfo is not None and call.excinfo.value is failure:
        # The short test summary gives the failure's message whole under CI (and with
        # -vv): one line there, the report itself is in the failure section above it.
        lines = failure.msg.splitlines()
        shown = 2 if lines[0] == "agentproxy:" and len(lines) > 1 else 1
        crash.message = " ".join(lines[:shown])
        if len(lines) > shown:
            crash.message += f" (+{len(lines) - shown} more lines above)"
    return report


def pytest_sessionfinish(session):
    # An xdist worker sends what it has to tell to the controller (pytest_testnodedown).
    told = getattr(session.config, "_agentproxy_told", None)
    if told is not None and hasattr(session.config, "workeroutput"):
        session.config.workeroutput["agentproxy"] = told


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    told = getattr(node.config, "_agentproxy_told", None)
    sent = getattr(node, "workeroutput", {}).get("agentproxy")
    if told is not None and sent:
        # Workers end in any order: the lists read the same whichever ended first.
        for key, entries in told.items():
            entries.extend(sent[key])
            entries.sort(key=lambda entry: entry[0])


def pytest_terminal_summary(terminalreporter, config):
    told = getattr(config, "_agentproxy_told", None)
    if told is None:
        return
    if told["drifted"]:
        # What each re-recording changed against the cassette it replaced, as
        # `agentproxy diff` prints it.
        terminalreporter.section("agentproxy: trajectories changed by re-recording")
        for nodeid, drift in told["drifted"]:
            terminalreporter.write_line(f"{nodeid}: {drift['verdict']}")
            for line in drift["diff"].splitlines():
                terminalreporter.write_line(f"    {line}".rstrip())
    if told["unused"]:
        terminalreporter.section("agentproxy: recordings not used")
        for nodeid, line in told["unused"]:
            terminalreporter.write_line(f"{nodeid}: {line}")
