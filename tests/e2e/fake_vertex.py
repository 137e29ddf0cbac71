"""A fake Google Vertex AI for the end-to-end tests (tests/clients/e2e_vertex.rs).

It checks what Vertex checks first, the OAuth bearer token (401 UNAUTHENTICATED in
Google's shape without the one it issues), then answers Gemini's generateContent and
streamGenerateContent (`?alt=sse`) and Claude's rawPredict and streamRawPredict under
`…/projects/{p}/locations/{l}/publishers/{google|anthropic}/models/{m}:…`: a weather
question gets a `get_weather` call, its result the answer.

Usage: python fake_vertex.py LOG  (prints `port N`, serves until stdin closes; appends
one JSON line per request to LOG: its path and whether its token held)
"""

import json
import sys
import threading

from fake_server import Answering, serve

TOKEN = "ya29.e2e-vertex-token-not-a-real-one"
LOG = sys.argv[1]
LOCK = threading.Lock()


def gemini_answer(body):
    last = body["contents"][-1]["parts"]
    if any("functionResponse" in p for p in last):
        said = next(p["functionResponse"]["response"] for p in last if "functionResponse" in p)
        parts = [{"text": f"It is {said['weather']} in Paris."}]
    else:
        parts = [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17},
        "modelVersion": "gemini-2.5-flash",
    }


def claude_events(text):
    message = {"id": "msg_vertex", "type": "message", "role": "assistant", "model": "claude-sonnet-4-e2e",
               "content": [], "stop_reason": None, "usage": {"input_tokens": 8, "output_tokens": 1}}
    return [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[:6]}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[6:]}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]


class Handler(Answering):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        holds = self.headers.get("Authorization") == f"Bearer {TOKEN}"
        with LOCK, open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "token": holds}) + "\n")
        if not holds:
            error = {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}
            return self.send(401, "application/json", json.dumps({"error": error}))
        path, _, query = self.path.partition("?")
        if path.endswith(":generateContent"):
            return self.send(200, "application/json", json.dumps(gemini_answer(body)))
        if path.endswith(":streamGenerateContent") and query == "alt=sse":
            return self.send(200, "text/event-stream", f"data: {json.dumps(gemini_answer(body))}\r\n\r\n")
        text = "Bonjour from Claude on Vertex."
        if path.endswith(":streamRawPredict") or (path.endswith(":rawPredict") and body.get("stream")):
            events = "".join(f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in claude_events(text))
            return self.send(200, "text/event-stream", events)
        if path.endswith(":rawPredict"):
            answer = {"id": "msg_vertex", "type": "message", "role": "assistant", "model": "claude-sonnet-4-e2e",
                      "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                      "usage": {"input_tokens": 8, "output_tokens": 5}}
            return self.send(200, "application/json", json.dumps(answer))
        self.send(404, "application/json", json.dumps({"error": {"code": 404, "message": path, "status": "NOT_FOUND"}}))


serve(Handler)
