// The official JS SDK against a running `master-agent serve`: every method of its assistants, threads,
// runs, store and crons clients, each driven once as a LangGraph user would. Run by tests/test_js_sdk.py,
// which starts the server and passes MASTER_AGENT_URL and MASTER_AGENT_KEY. Each method is a named check;
// a check that throws is recorded and the rest still run. Prints one JSON line (what passed, what failed
// and why, what was seen) and exits non-zero when any check failed.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.env.MASTER_AGENT_URL, apiKey: process.env.MASTER_AGENT_KEY });
const seen = {};
const passed = [];
const failed = {};

function check(condition, what, detail) {
  if (!condition) {
    throw new Error(`${what}${detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 600)}`}`);
  }
}

async function step(name, body) {
  try {
    await body();
    passed.push(name);
  } catch (error) {
    failed[name] = String(error?.stack ?? error).slice(0, 800);
  }
}

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

async function rejected(promise, status) {
  try {
    await promise;
  } catch (error) {
    return String(error).includes(String(status));
  }
  return false;
}

const hello = { messages: [{ role: "user", content: "hi" }] };
const ctx = {};

// Assistants
await step("assistants.create", async () => {
  const made = await client.assistants.create({
    graphId: "chat",
    name: `js ${process.pid}`,
    config: { configurable: { tone: "plain" } },
    metadata: { suite: "js", run: process.pid },
  });
  check(made.graph_id === "chat" && made.name === `js ${process.pid}`, "the new assistant", made);
  ctx.assistantId = made.assistant_id;
});
await step("assistants.get", async () => {
  const got = await client.assistants.get(ctx.assistantId);
  check(got.assistant_id === ctx.assistantId && got.metadata.suite === "js", "assistants.get", got);
});
await step("assistants.update", async () => {
  const updated = await client.assistants.update(ctx.assistantId, { name: `js ${process.pid} v2` });
  check(updated.name === `js ${process.pid} v2` && updated.version === 2, "a new version", updated);
});
await step("assistants.getVersions", async () => {
  const versions = await client.assistants.getVersions(ctx.assistantId);
  check(versions.length === 2, "two versions", versions.map((v) => v.version));
});
await step("assistants.setLatest", async () => {
  const back = await client.assistants.setLatest(ctx.assistantId, 1);
  check(back.version === 1 && back.name === `js ${process.pid}`, "version 1 is latest again", back);
});
await step("assistants.search", async () => {
  const found = await client.assistants.search({ metadata: { run: process.pid }, limit: 10 });
  check(found.length === 1 && found[0].assistant_id === ctx.assistantId, "assistants.search", found);
});
await step("assistants.count", async () => {
  check((await client.assistants.count({ metadata: { run: process.pid } })) === 1, "assistants.count");
});
await step("assistants.getGraph", async () => {
  const graph = await client.assistants.getGraph(ctx.assistantId, { xray: true });
  check(graph.nodes.some((node) => node.id === "writer" || node.id.startsWith("writer")), "the graph", graph);
});
await step("assistants.getSchemas", async () => {
  const schemas = await client.assistants.getSchemas(ctx.assistantId);
  check(schemas.graph_id === "chat" && schemas.input_schema !== undefined, "the schemas", Object.keys(schemas));
});
await step("assistants.getSubgraphs", async () => {
  const subgraphs = await client.assistants.getSubgraphs(ctx.assistantId);
  check(Object.keys(subgraphs).includes("writer"), "the writer sub-graph", Object.keys(subgraphs));
});

// Threads
await step("threads.create", async () => {
  const thread = await client.threads.create({ metadata: { suite: "js", run: process.pid } });
  ctx.threadId = thread.thread_id;
  check(thread.status === "idle", "a new thread is idle", thread);
});
await step("threads.get", async () => {
  check((await client.threads.get(ctx.threadId)).metadata.suite === "js", "threads.get");
});
await step("threads.update", async () => {
  const patched = await client.threads.update(ctx.threadId, { metadata: { owner: "js" } });
  check(patched.metadata.owner === "js" && patched.metadata.suite === "js", "merges", patched.metadata);
});
await step("threads.search", async () => {
  const found = await client.threads.search({ metadata: { run: process.pid, owner: "js" } });
  check(found.length === 1 && found[0].thread_id === ctx.threadId, "threads.search", found);
});
await step("threads.count", async () => {
  check((await client.threads.count({ metadata: { run: process.pid } })) === 1, "threads.count");
});

// Runs: a stream with sub-graphs, a background run joined and its stream read again.
await step("runs.stream", async () => {
  const streamed = await collect(
    client.runs.stream(ctx.threadId, ctx.assistantId, {
      input: hello,
      streamMode: ["values", "updates"],
      streamSubgraphs: true,
    }),
  );
  const names = streamed.map((part) => part.event);
  seen.stream_events = names;
  check(names[0] === "metadata", "the stream starts with metadata", names);
  check(names.some((name) => name.startsWith("updates|writer:")), "sub-graph events carry their namespace", names);
});
await step("threads.getState", async () => {
  const state = await client.threads.getState(ctx.threadId);
  check(state.values.messages.length === 2, "the state after the run", state.values);
  ctx.checkpointId = state.checkpoint.checkpoint_id;
  const first = await client.threads.getState(ctx.threadId, state.checkpoint);
  check(first.checkpoint.checkpoint_id === ctx.checkpointId, "the state at a checkpoint", first.checkpoint);
});
await step("threads.getHistory", async () => {
  const history = await client.threads.getHistory(ctx.threadId, { limit: 3 });
  check(history.length === 3, "three states", history.length);
});
await step("threads.updateState", async () => {
  const written = await client.threads.updateState(ctx.threadId, {
    values: { messages: [{ role: "user", content: "noted" }] },
  });
  check(written.checkpoint.checkpoint_id !== ctx.checkpointId, "a new checkpoint", written);
  const state = await client.threads.getState(ctx.threadId);
  check(state.values.messages.length === 3, "the written message", state.values);
});
await step("threads.patchState", async () => {
  const state = await client.threads.getState(ctx.threadId);
  await client.threads.patchState(state.checkpoint.thread_id ?? ctx.threadId, { reviewed: "yes" });
  const after = await client.threads.getState(ctx.threadId);
  check(after.metadata.reviewed === "yes", "the checkpoint's metadata", after.metadata);
});
await step("runs.create", async () => {
  const run = await client.runs.create(ctx.threadId, ctx.assistantId, {
    input: hello,
    streamMode: ["values", "updates"],
  });
  ctx.runId = run.run_id;
  check(["pending", "running", "success"].includes(run.status), "a background run", run);
});
await step("runs.join", async () => {
  const joined = await client.runs.join(ctx.threadId, ctx.runId);
  check(joined.messages.length === 5, "the joined run's values", joined);
});
await step("runs.joinStream", async () => {
  const whole = await collect(client.runs.joinStream(ctx.threadId, ctx.runId));
  const ids = whole.map((part) => part.id).filter((id) => id !== undefined);
  check(ids.length >= 3, "joinStream events have ids", ids);
  const rest = await collect(client.runs.joinStream(ctx.threadId, ctx.runId, { lastEventId: ids[1] }));
  const restIds = rest.map((part) => part.id).filter((id) => id !== undefined);
  check(restIds[0] === ids[2], "resumes strictly after lastEventId", { ids, restIds });
  seen.resumed_after = ids[1];
});
await step("runs.get", async () => {
  const run = await client.runs.get(ctx.threadId, ctx.runId);
  check(run.status === "success" && run.assistant_id === ctx.assistantId, "runs.get", run);
});
await step("runs.list", async () => {
  const listed = await client.runs.list(ctx.threadId);
  check(listed.length === 2 && listed.every((r) => r.status === "success"), "runs.list", listed.map((r) => r.status));
});
await step("runs.wait", async () => {
  const values = await client.runs.wait(ctx.threadId, ctx.assistantId, { input: hello });
  check(values.messages.length === 7, "the run's values", values);
  const stateless = await client.runs.wait(null, "chat", { input: hello });
  check(stateless.messages.length === 2, "a run without a thread", stateless);
});
await step("threads.joinStream", async () => {
  // The thread's own stream (its runs' events, each run closed by run_done), joined before a run starts.
  const controller = new AbortController();
  const events = [];
  let failure = null;
  const reading = (async () => {
    for await (const part of client.threads.joinStream(ctx.threadId, {
      streamMode: ["run_modes", "lifecycle"],
      signal: controller.signal,
    })) {
      events.push(part.event);
      if (part.event === "metadata" && part.data?.status === "run_done") controller.abort();
    }
  })().catch((error) => {
    if (!controller.signal.aborted) failure = error;
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  await client.runs.wait(ctx.threadId, ctx.assistantId, { input: hello });
  const timer = setTimeout(() => controller.abort(), 15000);
  await reading;
  clearTimeout(timer);
  if (failure) throw failure;
  check(events.includes("values") || events.some((e) => e.startsWith("values")), "the run's events", events);
  seen.thread_stream_events = events;
});
await step("runs.cancel", async () => {
  const run = await client.runs.create(ctx.threadId, "chat", { input: hello });
  await client.runs.cancel(ctx.threadId, run.run_id, true);
  const after = await client.runs.get(ctx.threadId, run.run_id);
  check(["interrupted", "success"].includes(after.status), "a cancelled run settles", after.status);
  ctx.cancelledRunId = run.run_id;
});
await step("runs.delete", async () => {
  await client.runs.delete(ctx.threadId, ctx.cancelledRunId);
  check(await rejected(client.runs.get(ctx.threadId, ctx.cancelledRunId), 404), "the deleted run is gone");
});
await step("runs.createBatch", async () => {
  const batch = await client.runs.createBatch([
    { assistantId: "chat", input: hello },
    { assistantId: "chat", input: hello },
  ]);
  check(batch.length === 2 && batch.every((run) => run.run_id), "two runs", batch);
});
await step("threads.copy", async () => {
  const copied = await client.threads.copy(ctx.threadId);
  check(copied.thread_id !== ctx.threadId, "a new thread", copied);
  const state = await client.threads.getState(copied.thread_id);
  const original = await client.threads.getState(ctx.threadId);
  check(state.values.messages.length === original.values.messages.length, "the same values", state.values);
  await client.threads.delete(copied.thread_id);
});

// The store
await step("store.putItem", async () => {
  await client.store.putItem(["js", "prefs"], "food", { text: "Ana loves ramen noodles" });
  await client.store.putItem(["js", "prefs"], "sport", { text: "Ana swims every morning" });
});
await step("store.getItem", async () => {
  const item = await client.store.getItem(["js", "prefs"], "food");
  check(item.value.text === "Ana loves ramen noodles", "store.getItem", item);
});
await step("store.searchItems", async () => {
  const hits = await client.store.searchItems(["js"], { query: "what food does Ana like", limit: 1 });
  check(hits.items.length === 1 && hits.items[0].key === "food", "by meaning", hits.items);
});
await step("store.listNamespaces", async () => {
  const spaces = await client.store.listNamespaces({ prefix: ["js"] });
  check(JSON.stringify(spaces.namespaces) === JSON.stringify([["js", "prefs"]]), "listNamespaces", spaces);
});
await step("store.deleteItem", async () => {
  await client.store.deleteItem(["js", "prefs"], "food");
  check((await client.store.getItem(["js", "prefs"], "food")) === null, "store.deleteItem");
});

// Crons
await step("crons.createForThread", async () => {
  const cron = await client.crons.createForThread(ctx.threadId, "chat", { schedule: "0 9 * * 1", input: hello });
  ctx.cronId = cron.cron_id;
  check(cron.thread_id === ctx.threadId, "a thread's cron", cron);
});
await step("crons.create", async () => {
  const cron = await client.crons.create("chat", { schedule: "0 10 * * 1", input: hello });
  check(cron.cron_id && cron.cron_id !== ctx.cronId, "a cron of its own threads", cron);
  ctx.statelessCronId = cron.cron_id;
});
await step("crons.search", async () => {
  const crons = await client.crons.search({ threadId: ctx.threadId });
  check(crons.length === 1 && crons[0].cron_id === ctx.cronId, "crons.search", crons);
});
await step("crons.count", async () => {
  check((await client.crons.count({ threadId: ctx.threadId })) === 1, "crons.count");
});
await step("crons.update", async () => {
  const paused = await client.crons.update(ctx.cronId, { enabled: false });
  check(paused.enabled === false, "crons.update", paused);
});
await step("crons.delete", async () => {
  await client.crons.delete(ctx.cronId);
  await client.crons.delete(ctx.statelessCronId);
  check((await client.crons.search({ threadId: ctx.threadId })).length === 0, "crons.delete");
});

// Removal last.
await step("threads.delete", async () => {
  await client.threads.delete(ctx.threadId);
  check(await rejected(client.threads.get(ctx.threadId), 404), "the deleted thread is gone");
});
await step("assistants.delete", async () => {
  await client.assistants.delete(ctx.assistantId);
  check(await rejected(client.assistants.get(ctx.assistantId), 404), "the deleted assistant is gone");
});

// Every public method of each sub-client is a check above: an SDK upgrade's new method fails here.
const undriven = [];
for (const name of ["assistants", "threads", "runs", "store", "crons"]) {
  const proto = Object.getPrototypeOf(client[name]);
  for (const method of Object.getOwnPropertyNames(proto)) {
    if (method !== "constructor" && !passed.includes(`${name}.${method}`) && !(`${name}.${method}` in failed)) {
      undriven.push(`${name}.${method}`);
    }
  }
}
const ok = Object.keys(failed).length === 0 && undriven.length === 0;
console.log(JSON.stringify({ ok, passed, failed, undriven, ...seen }));
process.exit(ok ? 0 : 1);
