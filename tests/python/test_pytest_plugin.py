"""The pytest plugin, tested with pytest's own `pytester`: each test writes a small
project, runs pytest on it in a subprocess with the plugin, and checks the outcome.

Run by tests/clients/pytest_plugin.rs, which starts the fake OpenAI and Anthropic upstreams and
passes their URLs (FAKE_OPENAI_URL, FAKE_ANTHROPIC_URL), the binary (AGENTPROXY_BIN) and
the plugin's package (PYTHONPATH)."""

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from agentproxy.pytest_plugin import PROTOCOL

pytest_plugins = ["pytester"]

# Nothing listens here: a replay that needed the upstream would fail.
STOPPED = "http://127.0.0.1:9"

AGENT = '''
import json, os, subprocess, sys
import anthropic
import pytest
from openai import OpenAI

# Both made at import time, before any test switched the proxy to its cassette.
openai_client = OpenAI()
anthropic_client = anthropic.Anthropic()

WEATHER = {"name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def weather(city, **_):
    return {"city": city, "temp_c": 18, "sky": "sunny"}  # the real tool


def ask_openai(question):
    messages = [{"role": "user", "content": question}]
    while True:
        m = openai_client.chat.completions.create(
            model="gpt-4o-mini", messages=messages,
            tools=[{"type": "function", "function": WEATHER}]).choices[0].message
        messages.append(m.model_dump(exclude_none=True))
        if not m.tool_calls:
            return m.content
        for c in m.tool_calls:
            result = weather(**json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(result)})


def ask_anthropic(question):
    tool = {"name": WEATHER["name"], "description": WEATHER["description"],
            "input_schema": WEATHER["parameters"]}
    messages = [{"role": "user", "content": question}]
    while True:
        m = anthropic_client.messages.create(
            model="claude-sonnet-4-5", max_tokens=256, messages=messages, tools=[tool])
        messages.append({"role": "assistant", "content": m.content})
        uses = [b for b in m.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in m.content if b.type == "text")
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u.id, "content": json.dumps(weather(**u.input))}
            for u in uses]})
'''

SUBPROCESS_AGENT = '''
import json, os, urllib.request
body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What's the weather in Lima?"}],
                   "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
                             headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
print(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["tool_calls"][0]["function"]["name"])
'''

TESTS = AGENT + '''

def test_openai(agentproxy):
    assert ask_openai("What's the weather in Paris?") == "It is 18°C and sunny in Paris."
    agentproxy.assert_called("get_weather", city="Paris")
    agentproxy.assert_not_called("get_time")
    assert [r["route"] for r in agentproxy.requests] == ["openai.chat", "openai.chat"]
    assert agentproxy.requests[0]["body"]["messages"][0]["content"] == "What's the weather in Paris?"
    assert agentproxy.reply == "It is 18°C and sunny in Paris."


def test_anthropic(agentproxy):
    assert "sunny in Rome" in ask_anthropic("What's the weather in Rome?")
    assert [c.arguments["city"] for c in agentproxy.calls("get_weather")] == ["Rome"]


def test_subprocess_agent(agentproxy, tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(SUBPROCESS_AGENT_SOURCE)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "get_weather"
    agentproxy.assert_called("get_weather", city="Lima")


@pytest.mark.agentproxy
def test_marked(tmp_path):
    assert ask_openai("What's the weather in Oslo?").endswith("in Oslo.")
'''.replace("SUBPROCESS_AGENT_SOURCE", repr(SUBPROCESS_AGENT))

MOCKS = AGENT + '''

def test_fixed(agentproxy):
    agentproxy.mock_tool("get_weather", result={"city": "Oslo", "temp_c": -5, "sky": "snowy"})
    assert ask_openai("What's the weather in Oslo?") == "It is -5°C and snowy in Oslo."


def test_when_rules(agentproxy):
    agentproxy.mock_tool("get_weather", when={"city": "Lima"}, result={"city": "Lima", "temp_c": 25, "sky": "hazy"})
    agentproxy.mock_tool("get_weather", result={"city": "?", "temp_c": 0, "sky": "grey"})
    assert ask_openai("What's the weather in Lima?") == "It is 25°C and hazy in Lima."


def test_too_late(agentproxy):
    ask_openai("What's the weather in Paris?")
    with pytest.raises(Exception, match="mock tools and set tolerances before the agent runs"):
        agentproxy.mock_tool("get_weather", result={})
'''


MATCHERS = AGENT + '''

def test_matchers(agentproxy):
    ask_openai("What's the weather in Paris?")
    agentproxy.assert_called("get_weather", city={"regex": "^Par"})
    agentproxy.assert_not_called("get_weather", city={"regex": "^Rome"})
    agentproxy.assert_expect(calls=["get_weather"], count=1, requests=2,
                             reply={"contains": "sunny"})
    assert agentproxy.failures(never=["get_weather"])


def test_a_failing_matcher_says_why(agentproxy):
    ask_openai("What's the weather in Paris?")
    agentproxy.assert_called("get_weather", city={"regex": "^Rome"})


@pytest.mark.agentproxy(match={"holes": [{"name": "run", "regex": "run-[0-9]+"}]})
def test_tolerated(agentproxy):
    ask_openai(f"What's the weather in Paris? ({os.environ['RUN_ID']})")
    agentproxy.assert_called("get_weather", city="Paris")
'''


@pytest.fixture
def env(monkeypatch):
    """The outer session's environment, as a user's shell would have it."""
    for name in ("CI", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "AGENTPROXY_URL",
                 "AGENTPROXY_UPSTREAM", "AGENTPROXY_ANTHROPIC_UPSTREAM"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def record(pytester, env, *args):
    env.setenv("OPENAI_API_KEY", "sk-test-secret-0123456789")
    env.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret-0123456789")
    result = pytester.runpytest_subprocess(
        "-p", "agentproxy.pytest_plugin", "--agentproxy-mode=record",
        "--agentproxy-upstream", os.environ["FAKE_OPENAI_URL"],
        "--agentproxy-anthropic-upstream", os.environ["FAKE_ANTHROPIC_URL"], *args)
    env.delenv("OPENAI_API_KEY")
    env.delenv("ANTHROPIC_API_KEY")
    return result


def replay(pytester, env, *args):
    """Under CI, without keys, the upstreams stopped."""
    env.setenv("CI", "true")
    return pytester.runpytest_subprocess(
        "-p", "agentproxy.pytest_plugin", "--agentproxy-upstream", STOPPED,
        "--agentproxy-anthropic-upstream", STOPPED, *args)


def cassettes(pytester, module):
    return sorted(p.name for p in (pytester.path / "cassettes" / module).iterdir())


def test_record_then_replay_with_the_upstream_stopped(pytester, env):
    pytester.makepyfile(test_agent=TESTS)
    record(pytester, env).assert_outcomes(passed=4)
    assert cassettes(pytester, "test_agent") == [
        "test_anthropic.json", "test_marked.json", "test_openai.json", "test_subprocess_agent.json"]
    recorded = (pytester.path / "cassettes/test_agent/test_openai.json").read_text()
    assert "sk-test-secret" not in recorded
    assert json.loads(recorded)["interactions"][0]["route"] == "openai.chat"

    replay(pytester, env).assert_outcomes(passed=4)
    replay(pytester, env, "-k", "anthropic").assert_outcomes(passed=1, deselected=3)
    # The run as one HTML page, also when two xdist workers (two serves) ran its tests.
    for workers in ([], ["-n", "2"]):
        page = pytester.path / "report.html"
        replay(pytester, env, f"--agentproxy-html={page}", *workers).assert_outcomes(passed=4)
        html = page.read_text()
        names = re.findall(r'data-status="passed" data-name="pytest::([^"]+)"', html)
        assert sorted(names) == [f"test_agent.py::test_{t}" for t in
                                 ("anthropic", "marked", "openai", "subprocess_agent")], html
        page.unlink()


def test_a_rerecord_says_how_each_trajectory_changed(pytester, env):
    pytester.makepyfile(test_agent=TESTS)
    record(pytester, env, "-k", "openai").assert_outcomes(passed=1, deselected=3)
    same = record(pytester, env, "-k", "openai")
    same.assert_outcomes(passed=1, deselected=3)
    assert "trajectories changed" not in same.stdout.str()
    pytester.makepyfile(test_agent=TESTS.replace("weather in Paris?", "weather in Paris today?"))
    changed = record(pytester, env, "-k", "openai")
    changed.assert_outcomes(passed=1, deselected=3)
    out = changed.stdout.str()
    assert "agentproxy: trajectories changed by re-recording" in out, out
    assert "test_agent.py::test_openai: benign" in out, out
    assert "Paris today?" in out, out
    assert "    verdict: benign" in out, out


def test_two_xdist_workers_replay(pytester, env):
    pytester.makepyfile(test_agent=TESTS)
    record(pytester, env).assert_outcomes(passed=4)
    result = replay(pytester, env, "-n", "2")
    result.assert_outcomes(passed=4)
    assert "2 workers" in result.stdout.str()


TWO_QUESTIONS = '''
from openai import OpenAI

QUESTIONS = ["What's the weather in Paris?", "And in Rome?"]


def ask(questions):
    client = OpenAI()
    for q in questions:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": q}])


def test_first(agentproxy):
    ask(QUESTIONS)


def test_second(agentproxy):
    ask(QUESTIONS)
'''


def test_under_xdist_what_each_worker_found_is_told_at_the_end(pytester, env):
    """Each test runs on its own worker; the controller tells both, in nodeid order."""
    pytester.makepyfile(test_two=TWO_QUESTIONS)
    record(pytester, env, "-n", "2").assert_outcomes(passed=2)
    pytester.makepyfile(test_two=TWO_QUESTIONS.replace("in questions:", "in questions[:1]:"))
    replayed = replay(pytester, env, "-n", "2")
    replayed.assert_outcomes(passed=2)
    out = replayed.stdout.str()
    assert "2 workers" in out, out
    told = out[out.index("agentproxy: recordings not used"):]
    first, second = told.index("test_two.py::test_first: "), told.index("test_two.py::test_second: ")
    assert first < second, out
    assert told.count("#1 POST /v1/chat/completions (openai.chat)") == 2, out

    rerecorded = record(pytester, env, "-n", "2")
    rerecorded.assert_outcomes(passed=2)
    out = rerecorded.stdout.str()
    told = out[out.index("agentproxy: trajectories changed by re-recording"):]
    first, second = told.index("test_two.py::test_first: "), told.index("test_two.py::test_second: ")
    assert first < second, out
    assert "And in Rome?" in told, out


def test_a_miss_fails_the_test_with_the_near_miss_report(pytester, env):
    pytester.makepyfile(test_agent=TESTS)
    record(pytester, env, "-k", "openai").assert_outcomes(passed=1, deselected=3)
    pytester.makepyfile(test_agent=TESTS.replace("weather in Paris?", "weather in Paris today?"))
    result = replay(pytester, env, "-k", "openai")
    result.assert_outcomes(failed=1, deselected=3)
    out = result.stdout.str()
    assert "agentproxy:\ncassette miss: POST /v1/chat/completions (openai.chat) has no recording" in out
    assert "+ What's the weather in Paris today?" in out
    # The hint gives the command that records this test again.
    assert "re-record (`pytest test_agent.py::test_openai --agentproxy-mode=record`)" in out
    # In pytest's words: its marker, ini option and fixture, never a CLI flag or a spec.
    assert "`@pytest.mark.agentproxy(match=...)`, `agentproxy_match` in the ini file, or " \
        "`agentproxy.mock_tool(...)`" in out, out
    assert "--match-ignore" not in out and "spec" not in out, out
    assert "recordings not used" not in out
    # The short test summary, where CI has pytest print whole messages, gives it in a line.
    summary = out[out.index("short test summary info"):].splitlines()
    assert summary[1].startswith("FAILED test_agent.py::test_openai - agentproxy: cassette miss: "
                                 "POST /v1/chat/completions (openai.chat) has no recording (+"), out
    assert summary[1].endswith(" more lines above)"), out
    assert summary[2].startswith("="), out
    # On the run's HTML page the test is failed by its miss and by what the SDK raised.
    page = pytester.path / "report.html"
    replay(pytester, env, "-k", "openai", f"--agentproxy-html={page}")
    html = page.read_text()
    assert 'data-status="failed" data-name="pytest::test_agent.py::test_openai"' in html, html
    assert "cassette miss: POST /v1/chat/completions (openai.chat) has no recording" in html, html
    assert "the test&#39;s own code (pytest)" in html or "the test's own code (pytest)" in html, html
    # A test with no cassette at all fails saying how to record it, in a few lines.
    result = replay(pytester, env, "-k", "anthropic")
    result.assert_outcomes(failed=1, deselected=3)
    out = result.stdout.str()
    assert "agentproxy:\nno cassette " in out, out
    assert "to replay, and the test made 1 request(s) that needed one; record it with " \
        "`pytest test_agent.py::test_anthropic --agentproxy-mode=record`" in out, out
    assert "pytest_plugin.py" not in out, out


def test_a_serve_that_stops_answering_fails_the_rest_at_once(pytester, env):
    """A stopped serve (SIGSTOP) times out the first control request; every later test
    fails at once, and the session ends without waiting on serve forever."""
    pytester.makepyfile(test_stuck="""
import os, signal, time

def test_stops_serve(agentproxy, request):
    pid = request.config._agentproxy.process.pid
    os.kill(pid, signal.SIGSTOP)
    # kill() returns before the process has stopped; a serve thread already running
    # could still answer the test's end. Wait for the stop (state T), bounded.
    for _ in range(2000):
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == "T":
                break
        time.sleep(0.005)

def test_after(agentproxy):
    pass

def test_after_too(agentproxy):
    pass
""")
    env.setenv("AGENTPROXY_CONTROL_TIMEOUT", "2")
    started = time.monotonic()
    result = replay(pytester, env)
    took = time.monotonic() - started
    result.assert_outcomes(failed=3)
    out = result.stdout.str() + result.stderr.str()
    assert "agentproxy serve did not answer DELETE /_agentproxy/test within 2 s" in out, out
    # The two later tests, each in its failure and its summary line.
    assert out.count("earlier in this session, so it was ended") == 4, out
    assert took < 30, took


def test_a_test_that_asks_the_model_nothing_needs_no_cassette(pytester, env):
    """Recording writes none for it, so a replay must not ask for one."""
    pytester.makepyfile(test_plain="""
import pytest

def test_arithmetic(agentproxy):
    assert 1 + 1 == 2

@pytest.mark.agentproxy
def test_marked():
    assert "a".upper() == "A"
""")
    record(pytester, env).assert_outcomes(passed=2)
    assert not list(pytester.path.glob("cassettes/**/*.json"))
    replay(pytester, env).assert_outcomes(passed=2)


def test_a_request_outside_any_test_says_no_test_is_active(pytester, env):
    pytester.makepyfile(test_outside=AGENT + '''

def test_without_the_fixture():
    ask_openai("What's the weather in Paris?")
''')
    result = replay(pytester, env)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "no agentproxy test is active, and between tests every request misses" in out, out
    assert "re-record" not in out, out


def test_mocks_answer_in_record_and_replay(pytester, env):
    pytester.makepyfile(test_mocks=MOCKS)
    record(pytester, env).assert_outcomes(passed=3)
    fixed = (pytester.path / "cassettes/test_mocks/test_fixed.json").read_text()
    assert "snowy" in fixed and "sunny" not in fixed, "the model was told the mock"
    replay(pytester, env).assert_outcomes(passed=3)


def test_a_binary_of_another_protocol_stops_the_session_saying_what_to_install(pytester, env):
    """The plugin against a binary of an older release (its listening line has no
    protocol version)."""
    old = pytester.path / "old-agentproxy"
    old.write_text("#!/bin/sh\necho '{\"url\": \"http://127.0.0.1:9\", \"env\": {}}'\ncat >/dev/null\n")
    old.chmod(0o755)
    env.setenv("AGENTPROXY_BIN", str(old))
    pytester.makepyfile(test_agent=TESTS)
    result = pytester.runpytest_subprocess("-p", "agentproxy.pytest_plugin")
    assert result.ret != 0
    err = result.stderr.str()
    assert f"{old} speaks control protocol no version (a release older than this plugin); " \
        f"this plugin speaks version {PROTOCOL}" in err, err


def test_a_plugin_of_another_protocol_is_refused_at_its_first_test():
    """What an older plugin sends to this binary: a start request with no protocol version
    (and, before protocol 2, no secret)."""
    serve = subprocess.Popen([os.environ["AGENTPROXY_BIN"], "serve"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        hello = json.loads(serve.stdout.readline())
        assert hello["protocol"] == PROTOCOL
        body = json.dumps({"name": "t", "cassette": "c.json", "mode": "replay"}).encode()

        def refused(headers):
            request = urllib.request.Request(f"{hello['url']}/_agentproxy/test", data=body,
                                             method="POST", headers=headers)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request)
            return refused.value.code, json.load(refused.value)["error"]

        code, error = refused({})
        assert code == 403
        assert "install the agentproxy wheel of the same release" in error, error
        code, error = refused({"x-agentproxy-secret": hello["env"]["AGENTPROXY_SECRET"]})
        assert code == 400
        assert error.startswith("the client speaks control protocol no version (a plugin "
                                "older than this binary); agentproxy "), error
        assert f"speaks version {PROTOCOL}: install the agentproxy wheel of the same release" in error
    finally:
        serve.stdin.close()
        serve.wait(timeout=60)


def test_under_ci_only_the_command_line_chooses_to_record(pytester, env):
    """The rule `agentproxy test` follows: in CI, the ini file and a test's marker may not
    pick a mode that calls the real model; the command line may."""
    env.setenv("CI", "true")
    pytester.makepyfile(test_ci='''
import pytest

@pytest.mark.agentproxy(mode="record")
def test_marked(agentproxy):
''' + "\n".join("    " + line for line in SUBPROCESS_AGENT.strip().splitlines()))
    # The marker's mode is replay in CI: nothing to replay, nothing recorded.
    result = pytester.runpytest_subprocess("-p", "agentproxy.pytest_plugin")
    result.assert_outcomes(failed=1)
    assert "test_marked.json to replay" in result.stdout.str(), result.stdout.str()
    assert not (pytester.path / "cassettes").exists()

    pytester.makeini("[pytest]\nagentproxy_mode = record\n")
    result = pytester.runpytest_subprocess("-p", "agentproxy.pytest_plugin")
    assert result.ret != 0
    assert "CI is set, and agentproxy_mode in the ini file asks for mode `record`" \
        in result.stderr.str(), result.stderr.str()

    env.setenv("OPENAI_API_KEY", "sk-test-secret-0123456789")
    result = pytester.runpytest_subprocess(
        "-p", "agentproxy.pytest_plugin", "--agentproxy-mode=record",
        "--agentproxy-upstream", os.environ["FAKE_OPENAI_URL"])
    result.assert_outcomes(passed=1)


def test_tests_that_would_share_a_cassette_are_refused_at_collection(pytester, env):
    """Ids that differ only in characters the cassette name drops, and modules of one name
    in two directories, would share a file: refused before anything runs. Ids too long for
    a file name are cut, and still get a file each."""
    pytester.makepyfile(test_ids='''
import pytest

@pytest.mark.parametrize("q", ["what?", "what!"])
def test_ask(agentproxy, q):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "agentproxy.pytest_plugin")
    assert result.ret != 0
    err = result.stderr.str()
    assert "tests test_ids.py::test_ask[what?] and test_ids.py::test_ask[what!] would share " \
        "the cassette" in err, err

    # Ids longer than a file name may be: cut, each with a hash of its own.
    long = "x" * 400
    pytester.makepyfile(test_ids=f'''
import pytest
from openai import OpenAI

@pytest.mark.parametrize("q", ["{long}", "{long}y"], ids=["{long}", "{long}y"])
def test_ask(agentproxy, q):
    OpenAI().chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": q}}])
''')
    record(pytester, env).assert_outcomes(passed=2)
    names = cassettes(pytester, "test_ids")
    assert len(names) == 2 and all(n.startswith("test_ask-xxx") and len(n) == 85 for n in names), names

    (pytester.path / "test_ids.py").unlink()
    for d in ("a", "b"):
        pytester.mkpydir(d)
        (pytester.path / d / "test_same.py").write_text(
            "def test_it(agentproxy):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "agentproxy.pytest_plugin", "--co")
    assert result.ret == 0, "cassettes next to each test file do not collide"
    pytester.makeini("[pytest]\nagentproxy_cassette_dir = cassettes\n")
    result = pytester.runpytest_subprocess("-p", "agentproxy.pytest_plugin", "--co")
    assert result.ret != 0
    assert "would share the cassette" in result.stderr.str(), result.stderr.str()


def test_matchers_are_the_runners_and_tolerances_come_from_the_marker_and_the_ini(pytester, env):
    pytester.makepyfile(test_matchers=MATCHERS)
    pytester.makeini('[pytest]\nagentproxy_match = {"ignore": ["/user"]}\n')
    env.setenv("RUN_ID", "run-1")
    result = record(pytester, env)
    result.assert_outcomes(passed=2, failed=1)
    recorded = json.loads((pytester.path / "cassettes/test_matchers/test_tolerated.json").read_text())
    assert recorded["match"] == {"ignore": ["/user"],
                                 "holes": [{"name": "run", "regex": "run-[0-9]+"}]}, recorded
    env.setenv("RUN_ID", "run-2")
    result = replay(pytester, env)
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    # The runner's words for a failed expectation, and none of the plugin's frames.
    assert "missing call: get_weather {city: regex /^Rome/}" in out, out
    assert 'expected regex /^Rome/, got "Paris"' in out, out
    assert "pytest_plugin.py" not in out, out


def test_auto_mode_without_a_key_replays_what_is_recorded_and_names_the_key_to_record(pytester, env):
    """Placeholder keys in auto mode: clients made at import time start with no key; the
    tests with a cassette replay, one without fails naming the variable to set."""
    pytester.makepyfile(test_agent=TESTS)
    record(pytester, env, "-k", "openai").assert_outcomes(passed=1, deselected=3)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.delenv(name, raising=False)
    result = pytester.runpytest_subprocess(
        "-p", "agentproxy.pytest_plugin", "--agentproxy-upstream", STOPPED,
        "--agentproxy-anthropic-upstream", STOPPED, "-k", "openai or anthropic")
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    out = result.stdout.str()
    assert "set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN to record" in out, out
