// The official JS SDK against a running `master-agent serve`: threads, runs.stream with sub-graphs,
// joinStream resumed after lastEventId, the store and crons. Run by tests/test_js_sdk.py, which starts
// the server and passes MASTER_AGENT_URL and MASTER_AGENT_KEY; prints one JSON line of what it saw and
// exits non-zero on the first check that fails.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.env.MASTER_AGENT_URL, apiKey: process.env.MASTER_AGENT_KEY });
const seen = {};

function check(condition, what, detail) {
  if (!condition) {
    throw new Error(`check failed: ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const hello = { messages: [{ role: "user", content: "hi" }] };

// Threads
const thread = await client.threads.create({ metadata: { suite: "js", run: process.pid } });
const threadId = thread.thread_id;
check((await client.threads.get(threadId)).metadata.suite === "js", "threads.get");
const patched = await client.threads.update(threadId, { metadata: { owner: "js" } });
check(patched.metadata.owner === "js" && patched.metadata.suite === "js", "threads.update merges", patched.metadata);
const found = await client.threads.search({ metadata: { run: process.pid, owner: "js" } });
check(found.length === 1 && found[0].thread_id === threadId, "threads.search", found);
check((await client.threads.count({ metadata: { run: process.pid } })) === 1, "threads.count");

// runs.stream with sub-graphs: the chat graph's writer sub-graph streams under its namespace.
const streamed = await collect(
  client.runs.stream(threadId, "chat", { input: hello, streamMode: ["values", "updates"], streamSubgraphs: true }),
);
const names = streamed.map((part) => part.event);
seen.stream_events = names;
check(names[0] === "metadata", "the stream starts with metadata", names);
check(names.some((name) => name.startsWith("updates|writer:")), "sub-graph events carry their namespace", names);
const state = await client.threads.getState(threadId);
check(state.values.messages.length === 2, "threads.getState after the run", state.values);
check((await client.threads.get(threadId)).values.messages.length === 2, "the thread shows its values");
const history = await client.threads.getHistory(threadId, { limit: 3 });
check(history.length === 3, "threads.getHistory", history.length);

// A background run joined, then its stream read again from the start and after an event id.
const run = await client.runs.create(threadId, "chat", { input: hello, streamMode: ["values", "updates"] });
await client.runs.join(threadId, run.run_id);
const whole = await collect(client.runs.joinStream(threadId, run.run_id));
const ids = whole.map((part) => part.id).filter((id) => id !== undefined);
check(ids.length >= 3, "joinStream events have ids", ids);
const rest = await collect(client.runs.joinStream(threadId, run.run_id, { lastEventId: ids[1] }));
const restIds = rest.map((part) => part.id).filter((id) => id !== undefined);
check(restIds[0] === ids[2], "joinStream resumes strictly after lastEventId (event 0 not again)", { ids, restIds });
seen.resumed_after = ids[1];
const listed = await client.runs.list(threadId);
check(listed.length === 2 && listed.every((r) => r.status === "success"), "runs.list", listed.map((r) => r.status));

// The store
await client.store.putItem(["js", "prefs"], "food", { text: "Ana loves ramen noodles" });
await client.store.putItem(["js", "prefs"], "sport", { text: "Ana swims every morning" });
const item = await client.store.getItem(["js", "prefs"], "food");
check(item.value.text === "Ana loves ramen noodles", "store.getItem", item);
const hits = await client.store.searchItems(["js"], { query: "what food does Ana like", limit: 1 });
check(hits.items.length === 1 && hits.items[0].key === "food", "store.searchItems by meaning", hits.items);
const spaces = await client.store.listNamespaces({ prefix: ["js"] });
check(JSON.stringify(spaces.namespaces) === JSON.stringify([["js", "prefs"]]), "store.listNamespaces", spaces);
await client.store.deleteItem(["js", "prefs"], "food");
check((await client.store.getItem(["js", "prefs"], "food")) === null, "store.deleteItem");

// Crons
const cron = await client.crons.createForThread(threadId, "chat", { schedule: "0 9 * * 1", input: hello });
const crons = await client.crons.search({ threadId });
check(crons.length === 1 && crons[0].cron_id === cron.cron_id, "crons.search", crons);
check((await client.crons.count({ threadId })) === 1, "crons.count");
const paused = await client.crons.update(cron.cron_id, { enabled: false });
check(paused.enabled === false, "crons.update", paused);
await client.crons.delete(cron.cron_id);
check((await client.crons.search({ threadId })).length === 0, "crons.delete");

await client.threads.delete(threadId);
let gone = false;
try {
  await client.threads.get(threadId);
} catch (error) {
  gone = String(error).includes("404");
}
check(gone, "threads.delete");

console.log(JSON.stringify({ ok: true, ...seen }));
