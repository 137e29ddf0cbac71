"""An agent on the OpenAI Agents SDK (`openai-agents`): an `Agent` with a `@function_tool`,
run with `Runner.run_sync`, on the Responses API. With `--stream` it is run with
`Runner.run_streamed` instead, which streams every model response (`stream: true`) and
prints each text delta as the SDK surfaces it.

The SDK builds its own requests (instructions, the tool's strict JSON schema, the whole
history echoed back as input items with their ids and statuses), so this checks that a
framework's traffic records and replays, not just hand-written calls. The model comes from
the default OpenAI client, which reads OPENAI_BASE_URL and OPENAI_API_KEY.

The SDK uploads traces to api.openai.com unless OPENAI_AGENTS_DISABLE_TRACING=1; agentproxy
sets it for a replay, the test sets it for the record run.
Usage: agents_sdk.py [--stream] [QUESTION]
"""

import asyncio
import json
import sys

from agents import Agent, Runner, function_tool, set_default_openai_api
from openai.types.responses import ResponseTextDeltaEvent

from weather import MODEL, SYSTEM, run_tool


@function_tool
def get_weather(city: str, unit: str) -> str:
    """Current weather in a city.

    Args:
        city: The city name.
        unit: celsius or fahrenheit.
    """
    return run_tool("get_weather", json.dumps({"city": city, "unit": unit}))


async def run_streamed(agent, question):
    result = Runner.run_streamed(agent, question)
    async for event in result.stream_events():
        if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
            print(f"delta: {event.data.delta!r}")
    return result


def main():
    set_default_openai_api("responses")
    agent = Agent(name="Weather assistant", instructions=SYSTEM, model=MODEL, tools=[get_weather])
    streaming = "--stream" in sys.argv[1:]
    words = [arg for arg in sys.argv[1:] if arg != "--stream"]
    question = words[0] if words else "What's the weather in Paris?"
    if streaming:
        result = asyncio.run(run_streamed(agent, question))
    else:
        result = Runner.run_sync(agent, question)
    for item in result.new_items:
        if item.type == "tool_call_item":
            arguments = json.loads(item.raw_item.arguments)
            print(f"tool call: {item.raw_item.name} {json.dumps(arguments, sort_keys=True)}")
        elif item.type == "tool_call_output_item":
            print(f"tool output: {item.output}")
    print(f"reply: {result.final_output}")
    usage = result.context_wrapper.usage
    print(f"requests: {usage.requests} usage: {usage.input_tokens}+{usage.output_tokens}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
