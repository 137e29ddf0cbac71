"""A fake AWS Bedrock Runtime for the end-to-end tests (tests/clients/e2e_bedrock.rs).

It checks what the real service checks first: the SigV4 signature, recomputed with
botocore from the request as received (method, raw path, the signed headers, the body)
and the secret of the access key; a request whose signature does not hold gets 403
InvalidSignatureException, as from AWS. Then it answers Converse, ConverseStream (AWS
event-stream frames), InvokeModel and InvokeModelWithResponseStream (Anthropic bodies):
a weather question gets a `get_weather` tool call, a tool result gets the answer.

Usage: python fake_bedrock.py LOG  (prints `port N`, serves until stdin closes; appends
one JSON line per request to LOG: its path, host and whether its signature held)
"""

import base64
import json
import re
import struct
import sys
import threading
import zlib

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from fake_server import Answering, serve

SECRETS = {"AKIDAGENTPROXYTEST01": "e2e/secret/key/not/a/real/one/000000000"}
LOG = sys.argv[1]
LOCK = threading.Lock()


def frame(headers, payload):
    raw = b""
    for name, value in headers.items():
        name, value = name.encode(), value.encode()
        raw += bytes([len(name)]) + name + b"\x07" + struct.pack(">H", len(value)) + value
    prelude = struct.pack(">II", 12 + len(raw) + len(payload) + 4, len(raw))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(kind, body):
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(body).encode())


def signature_holds(method, raw_path, headers, body):
    h = {k.lower(): v for k, v in headers.items()}
    m = re.match(
        r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
        r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})",
        h.get("authorization", ""),
    )
    if not m or m.group(1) not in SECRETS:
        return False
    key, _, region, service, signed, signature = m.groups()
    request = AWSRequest(method=method, url="http://" + h["host"] + raw_path, data=body,
                         headers={n: h.get(n, "") for n in signed.split(";")})
    request.context["timestamp"] = h.get("x-amz-date", "")
    auth = SigV4Auth(Credentials(key, SECRETS[key], h.get("x-amz-security-token")), service, region)
    canonical = auth.canonical_request(request)
    return auth.signature(auth.string_to_sign(request, canonical), request) == signature


def converse_answer(body):
    """The turn a Converse request gets: a tool call, or the answer after its result."""
    last = body["messages"][-1]["content"]
    results = [b["toolResult"] for b in last if "toolResult" in b]
    if results:
        said = results[0]["content"][0]["text"]
        return [{"text": f"It is {said}."}], "end_turn"
    call = {"toolUseId": "tooluse_e2e_1", "name": "get_weather", "input": {"city": "Paris"}}
    return [{"text": "Let me check."}, {"toolUse": call}], "tool_use"


def converse_frames(content, stop):
    frames = [event("messageStart", {"role": "assistant", "p": "abcdef"})]
    for at, block in enumerate(content):
        if "text" in block:
            for piece in (block["text"][:6], block["text"][6:]):
                frames.append(event("contentBlockDelta", {"contentBlockIndex": at, "delta": {"text": piece}}))
        else:
            call = block["toolUse"]
            start = {"toolUse": {"toolUseId": call["toolUseId"], "name": call["name"]}}
            frames.append(event("contentBlockStart", {"contentBlockIndex": at, "start": start}))
            text = json.dumps(call["input"])
            for piece in (text[:5], text[5:]):
                frames.append(event("contentBlockDelta", {"contentBlockIndex": at, "delta": {"toolUse": {"input": piece}}}))
        frames.append(event("contentBlockStop", {"contentBlockIndex": at}))
    frames.append(event("messageStop", {"stopReason": stop}))
    usage = {"inputTokens": 20, "outputTokens": 8, "totalTokens": 28}
    frames.append(event("metadata", {"usage": usage, "metrics": {"latencyMs": 42}}))
    return b"".join(frames)


def anthropic_events(text):
    message = {"id": "msg_e2e", "type": "message", "role": "assistant", "model": "claude-3-haiku-e2e",
               "content": [], "stop_reason": None, "usage": {"input_tokens": 9, "output_tokens": 1}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[:7]}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[7:]}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 6}},
        {"type": "message_stop"},
    ]


class Handler(Answering):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        holds = signature_holds("POST", self.path, self.headers, body)
        with LOCK, open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "host": self.headers.get("Host"), "signed": holds}) + "\n")
        if not holds:
            return self.send(403, "application/json", {"__type": "InvalidSignatureException",
                                                       "message": "The request signature we calculated does not match"})
        request = json.loads(body)
        path = self.path.split("?")[0]
        if path.endswith("/converse"):
            content, stop = converse_answer(request)
            usage = {"inputTokens": 20, "outputTokens": 8, "totalTokens": 28}
            answer = {"output": {"message": {"role": "assistant", "content": content}},
                      "stopReason": stop, "usage": usage, "metrics": {"latencyMs": 42}}
            return self.send(200, "application/json", answer)
        if path.endswith("/converse-stream"):
            return self.send(200, "application/vnd.amazon.eventstream", converse_frames(*converse_answer(request)))
        text = "Bonjour from Claude on Bedrock."
        if path.endswith("/invoke"):
            answer = {"id": "msg_e2e", "type": "message", "role": "assistant", "model": "claude-3-haiku-e2e",
                      "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                      "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 6}}
            return self.send(200, "application/json", answer)
        if path.endswith("/invoke-with-response-stream"):
            frames = b"".join(
                event("chunk", {"bytes": base64.b64encode(json.dumps(e).encode()).decode(), "p": "xyz"})
                for e in anthropic_events(text)
            )
            return self.send(200, "application/vnd.amazon.eventstream", frames)
        self.send(404, "application/json", {"__type": "ResourceNotFoundException", "message": path})


serve(Handler)
