// A chat completion by Node's own fetch to a hard-coded https://api.openai.com/v1, as a
// Node app that knows nothing of agentproxy does: it reaches the proxy only through
// HTTPS_PROXY, which Node 24 honours with NODE_USE_ENV_PROXY=1, and trusts the session's
// certificate authority through NODE_EXTRA_CA_CERTS. Prints the status and the reply.
//
// Refuses to run without those variables, so it never addresses the real host itself.
for (const name of ["HTTPS_PROXY", "NODE_USE_ENV_PROXY", "NODE_EXTRA_CA_CERTS"]) {
  if (!process.env[name]) {
    console.error(`${name} is not set: refusing to reach api.openai.com`);
    process.exit(2);
  }
}
const response = await fetch("https://api.openai.com/v1/chat/completions", {
  method: "POST",
  headers: {
    "content-type": "application/json",
    authorization: `Bearer ${process.env.OPENAI_API_KEY}`,
  },
  body: JSON.stringify({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "Say hello from Node." }],
  }),
});
const body = await response.json();
console.log(`status: ${response.status}`);
console.log(`reply: ${body.choices?.[0]?.message?.content ?? JSON.stringify(body)}`);
