"""The weather agent on Semantic Kernel (HoloDeck 0.6's agents run on it), with automatic
function calling, through three of its connectors, each not streamed, then streamed:

- `OpenAIChatCompletion`: the openai client reads OPENAI_BASE_URL;
- `AzureChatCompletion`: AZURE_OPENAI_BASE_URL, the deployment `weather-gpt-4o`.
  Semantic Kernel refuses an `http` AZURE_OPENAI_ENDPOINT, even when a base URL is given
  and the endpoint goes unused, so the script drops the endpoint agentproxy sets;
- `AzureChatCompletion` again, the way HoloDeck's agent.yaml gives it: an `https://`
  endpoint of its own (`weather-agent.openai.azure.com`), no base URL. It reaches the
  proxy as its HTTPS forward proxy (HTTPS_PROXY), which intercepts the Azure host;
- `OllamaChatCompletion`: the ollama client reads OLLAMA_HOST.

agentproxy sets those variables. The kernel runs the tool (`weather-get_weather`, as
Semantic Kernel names a plugin's function) itself. Everything printed is deterministic.
"""

import asyncio
import json
import os
import sys
from typing import Annotated

from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.ollama import (
    OllamaChatCompletion,
    OllamaChatPromptExecutionSettings,
)
from semantic_kernel.connectors.ai.open_ai import (
    AzureChatCompletion,
    AzureChatPromptExecutionSettings,
    OpenAIChatCompletion,
    OpenAIChatPromptExecutionSettings,
)
from semantic_kernel.contents import ChatHistory
from semantic_kernel.functions import kernel_function

from weather import SYSTEM, run_tool

QUESTION = "What's the weather in Paris?"


class Weather:
    @kernel_function(name="get_weather", description="Current weather in a city.")
    def get_weather(
        self,
        city: Annotated[str, "The city"],
        unit: Annotated[str, "celsius or fahrenheit"] = "celsius",
    ) -> str:
        arguments = json.dumps({"city": city, "unit": unit}, sort_keys=True)
        print(f"tool call: get_weather {arguments}")
        return run_tool("get_weather", arguments)


def connectors():
    os.environ.pop("AZURE_OPENAI_ENDPOINT", None)
    azure = AzureChatCompletion(deployment_name="weather-gpt-4o", api_version="2024-10-21")
    # As HoloDeck configures it: its own https endpoint, which no variable overrides.
    os.environ.pop("AZURE_OPENAI_BASE_URL", None)
    azure_https = AzureChatCompletion(
        deployment_name="weather-gpt-4o",
        api_version="2024-10-21",
        endpoint="https://weather-agent.openai.azure.com",
    )
    return [
        ("openai", OpenAIChatCompletion(ai_model_id="gpt-4o-mini"),
         OpenAIChatPromptExecutionSettings),
        ("azure", azure, AzureChatPromptExecutionSettings),
        ("azure-https", azure_https, AzureChatPromptExecutionSettings),
        ("ollama", OllamaChatCompletion(ai_model_id="llama3.2"),
         OllamaChatPromptExecutionSettings),
    ]


async def ask(kernel, service, settings, stream):
    history = ChatHistory(system_message=SYSTEM)
    history.add_user_message(QUESTION)
    if stream:
        pieces = []
        async for chunks in service.get_streaming_chat_message_contents(
            history, settings, kernel=kernel
        ):
            pieces += [str(c) for c in chunks if str(c)]
        return "".join(pieces)
    replies = await service.get_chat_message_contents(history, settings, kernel=kernel)
    return " ".join(str(r) for r in replies)


async def main():
    for name, service, settings_type in connectors():
        kernel = Kernel()
        kernel.add_service(service)
        kernel.add_plugin(Weather(), plugin_name="weather")
        settings = settings_type(function_choice_behavior=FunctionChoiceBehavior.Auto())
        for stream in (False, True):
            reply = await ask(kernel, service, settings, stream)
            print(f"{name} {'stream' if stream else 'whole'} reply: {reply}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
