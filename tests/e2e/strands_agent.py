"""A Strands agent with its default model, AWS Bedrock (tests/clients/e2e_clouds.rs):
one `get_weather` tool, the question asked once, the answer printed. Strands calls
ConverseStream through boto3, which reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME and its
credentials from the environment.
"""

from strands import Agent, tool


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    print("tool call: get_weather", city)
    return f"18C and sunny in {city}"


agent = Agent(tools=[get_weather], callback_handler=None)
result = agent("What's the weather in Paris?")
print("reply:", str(result).strip(), "| stop:", result.stop_reason)
