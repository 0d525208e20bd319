// A non-Python client of the tee proxy: node's own fetch (undici) reads a Chat Completions
// stream, decodes it as node does (gzip included), and assembles the tool calls the plain way
// an SDK would: by index, identity from the first non-empty id and name, arguments
// concatenated. It prints {"status", "published_as", "calls": [[id, name, arguments], ...]}.
// Usage: node node_client.mjs URL REQUEST_ID SESSION_ID
const [url, requestId, sessionId] = process.argv.slice(2);
const response = await fetch(url, {
  method: "POST",
  headers: {"content-type": "application/json", "x-request-id": requestId,
            "x-session-id": sessionId, "authorization": "Bearer test-key"},
  body: JSON.stringify({model: "deepseek-chat", stream: true,
                        messages: [{role: "user", content: "hi"}]}),
});
const calls = new Map();
let buffer = "";
const decoder = new TextDecoder();
for await (const piece of response.body) {
  buffer += decoder.decode(piece, {stream: true});
  let cut;
  while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
    const event = buffer.slice(0, cut);
    buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
    for (const line of event.split(/\r?\n/)) {
      if (!line.startsWith("data:")) continue;
      const data = line.slice(5).trim();
      if (data === "[DONE]") continue;
      const chunk = JSON.parse(data);
      for (const choice of chunk.choices ?? []) {
        for (const tc of choice.delta?.tool_calls ?? []) {
          const call = calls.get(tc.index) ?? {id: "", name: "", arguments: ""};
          if (typeof tc.id === "string" && tc.id) call.id = tc.id;
          if (typeof tc.function?.name === "string" && tc.function.name) call.name = tc.function.name;
          if (typeof tc.function?.arguments === "string") call.arguments += tc.function.arguments;
          calls.set(tc.index, call);
        }
      }
    }
  }
}
const ordered = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => [c.id, c.name, c.arguments]);
console.log(JSON.stringify({status: response.status,
                            published_as: response.headers.get("x-toolwire-request-id"),
                            calls: ordered}));
