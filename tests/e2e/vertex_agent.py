"""An agent on Google Vertex AI through google-genai and the Anthropic SDK
(tests/clients/e2e_vertex.rs): Gemini in a tool loop (generate_content) and streamed
(generate_content_stream), Claude through AnthropicVertex, plain and streamed. Each prints
what it got, so a replay can be compared with its record.

With `E2E_VERTEX_TOKEN` set (the record) both clients use that bearer token; without it
(the replay) they find their credentials as a program on Google Cloud does, through
application default credentials.
"""

import os

from anthropic import AnthropicVertex
from google import genai
from google.genai import types

PROJECT, LOCATION = "agentproxy-e2e", "us-east5"
TOKEN = os.environ.get("E2E_VERTEX_TOKEN")

credentials = None
if TOKEN:
    from google.oauth2.credentials import Credentials

    credentials = Credentials(token=TOKEN)
gemini = genai.Client(vertexai=True, project=PROJECT, location=LOCATION, credentials=credentials)
weather = types.FunctionDeclaration(
    name="get_weather",
    description="The weather in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
config = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[weather])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)
contents = [types.Content(role="user", parts=[types.Part(text="What's the weather in Paris?")])]
for _ in range(3):
    answer = gemini.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
    calls = answer.function_calls or []
    if not calls:
        print("gemini reply:", answer.text)
        break
    contents.append(answer.candidates[0].content)
    for call in calls:
        print("gemini tool call:", call.name, dict(call.args))
        result = types.Part.from_function_response(name=call.name, response={"weather": "18C and sunny"})
        contents.append(types.Content(role="user", parts=[result]))
streamed = gemini.models.generate_content_stream(model="gemini-2.5-flash", contents=contents, config=config)
print("gemini stream:", "".join(chunk.text or "" for chunk in streamed))

claude = AnthropicVertex(project_id=PROJECT, region=LOCATION, access_token=TOKEN)
ask = [{"role": "user", "content": "Say hello in French."}]
model = "claude-sonnet-4@20250514"
print("claude:", claude.messages.create(model=model, max_tokens=64, messages=ask).content[0].text)
with claude.messages.stream(model=model, max_tokens=64, messages=ask) as stream:
    print("claude stream:", "".join(stream.text_stream))
