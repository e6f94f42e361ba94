// The console's live parts, in plain JavaScript: charts drawn from the JSON a page embeds, server-sent
// event streams read with fetch (EventSource cannot POST or send the anti-forgery header), the call
// tree of agents and sub-agents as it streams, and the chat over the front door.
"use strict";

const API = "/console/api";
const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content || "";
window.consoleCharts = {};

function drawCharts() {
  for (const script of document.querySelectorAll("script[data-chart-for]")) {
    const canvas = document.getElementById(script.dataset.chartFor);
    if (!canvas || !window.Chart) continue;
    window.consoleCharts[canvas.id] = new window.Chart(canvas, JSON.parse(script.textContent));
  }
}

// Server-sent events of a fetch response: {event, data, id} each.
async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const fields = {};
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const at = line.indexOf(":");
        const name = at < 0 ? line : line.slice(0, at);
        const text = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
        fields[name] = name in fields ? fields[name] + "\n" + text : text;
      }
      if (!fields.event) continue;
      let data = null;
      try { data = fields.data ? JSON.parse(fields.data) : null; } catch { data = fields.data; }
      yield { event: fields.event, data, id: fields.id };
    }
  }
}

// The call tree: a call_start adds a node under the sub-agent call whose subgraph the event came from
// (the event's namespace says which), a call_end marks it done.
class CallTree {
  constructor(list) {
    this.list = list;
    this.reset();
  }
  reset() {
    this.list.replaceChildren();
    this.open = [];                 // [{node, ul, agent, depth, tool, kind, namespace, bound}]
    this.byNamespace = new Map();   // subgraph namespace -> the sub-agent call's <ul>
    this.count = 0;
  }
  parentList(agent, depth, namespace) {
    if (depth === 0 || !namespace) return this.list;
    if (this.byNamespace.has(namespace)) return this.byNamespace.get(namespace);
    const parentNs = namespace.split("|").slice(0, -1).join("|");
    const call = this.open.find((c) => !c.bound && c.kind === "sub_agent" && c.tool === agent
      && c.depth === depth - 1 && c.namespace === parentNs)
      || this.open.find((c) => !c.bound && c.kind === "sub_agent" && c.tool === agent && c.depth === depth - 1);
    if (!call) return this.list;
    call.bound = true;
    this.byNamespace.set(namespace, call.ul);
    return call.ul;
  }
  handle(data, namespace) {
    if (!data || typeof data !== "object") return;
    if (data.event === "call_start") {
      const node = document.createElement("li");
      node.className = `call ${data.kind} running`;
      node.dataset.agent = data.agent;
      node.dataset.tool = data.tool;
      node.dataset.depth = data.depth;
      node.innerHTML = '<span class="who"></span> → <span class="what"></span><span class="kind"></span> '
        + '<span class="status status-running">running</span>';
      node.querySelector(".who").textContent = data.agent;
      node.querySelector(".what").textContent = data.tool;
      node.querySelector(".kind").textContent = String(data.kind || "").replace("_", "-");
      const ul = document.createElement("ul");
      node.appendChild(ul);
      this.parentList(data.agent, data.depth, namespace).appendChild(node);
      this.open.push({ node, ul, agent: data.agent, depth: data.depth, tool: data.tool, kind: data.kind,
        namespace, bound: false });
      this.count += 1;
    } else if (data.event === "call_end") {
      const index = this.open.findIndex((c) => c.agent === data.agent && c.depth === data.depth
        && c.tool === data.tool && !c.ended);
      if (index < 0) return;
      const call = this.open[index];
      call.ended = true;
      call.node.classList.remove("running");
      call.node.classList.add(data.status || "success");
      const badge = call.node.querySelector(".status");
      badge.textContent = data.status || "success";
      badge.className = `status status-${data.status || "success"}`;
    }
  }
}

// A value as the pages show one (the Jinja macro ``show``): objects as term lists, arrays as lists.
function renderValue(value) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const list = document.createElement("dl");
    list.className = "kv";
    for (const [key, item] of Object.entries(value)) {
      const term = document.createElement("dt");
      term.textContent = key.replaceAll("_", " ");
      const detail = document.createElement("dd");
      detail.appendChild(renderValue(item));
      list.append(term, detail);
    }
    return list;
  }
  if (Array.isArray(value)) {
    const list = document.createElement("ul");
    for (const item of value) {
      const entry = document.createElement("li");
      entry.appendChild(renderValue(item));
      list.appendChild(entry);
    }
    return list;
  }
  const text = document.createElement("span");
  text.className = "value";
  text.textContent = value === null || value === undefined ? "—" : String(value);
  return text;
}

function splitEvent(name) {
  const at = name.indexOf("|");
  return at < 0 ? [name, ""] : [name.slice(0, at), name.slice(at + 1)];
}

async function followRun(section, { replay = false } = {}) {
  const thread = section.dataset.liveThread;
  const run = section.dataset.liveRun;
  const status = section.querySelector(".run-status");
  const tree = new CallTree(section.querySelector("[data-call-tree]"));
  const log = section.querySelector("[data-events]");
  if (log) log.replaceChildren();
  status.textContent = replay ? "Replaying…" : "Running…";
  const response = await fetch(`${API}/threads/${thread}/runs/${run}/stream`, { credentials: "same-origin" });
  if (!response.ok) {
    status.textContent = `Could not stream the run (${response.status}).`;
    return;
  }
  let ended = "success";
  for await (const { event, data } of readEvents(response)) {
    const [mode, namespace] = splitEvent(event);
    if (log && !mode.startsWith("messages")) {
      const item = document.createElement("li");
      item.textContent = event;
      log.appendChild(item);
    }
    if (mode === "custom") tree.handle(data, namespace);
    if (mode === "error") ended = "error";
  }
  status.textContent = `${replay ? "Replayed" : "Finished"}: ${tree.count} calls${ended === "error" ? ", ended in error" : ""}.`;
  section.dataset.done = "yes";
  if (section.dataset.reload === "yes") window.location.reload();
}

// A graph drawing wider than its box opens scrolled to its middle, where its entry is drawn.
function centreDiagrams() {
  for (const box of document.querySelectorAll("figure.diagram .scroll")) {
    box.scrollLeft = Math.max(0, (box.scrollWidth - box.clientWidth) / 2);
  }
}

function setUpRuns() {
  for (const section of document.querySelectorAll("section.live[data-live-run]")) {
    if (section.dataset.liveRun) followRun(section);
  }
  for (const button of document.querySelectorAll("button[data-replay]")) {
    button.addEventListener("click", () => {
      const section = document.getElementById("replay");
      section.hidden = false;
      section.dataset.liveRun = button.dataset.replay;
      section.dataset.done = "";
      followRun(section, { replay: true });
      section.querySelector("h2").focus?.();
    });
  }
}

// ---- Chat ----------------------------------------------------------------------------------------

const PREVIEW_ANSWERS = { accept: "please execute the proposed plan", cancel: "cancel" };

class Chat {
  constructor(root) {
    this.root = root;
    this.thread = root.dataset.thread || "";
    this.messages = root.querySelector("[data-messages]");
    this.waiting = root.querySelector("[data-waiting]");
    this.status = root.querySelector("[data-run-status]");
    this.tree = new CallTree(root.querySelector("[data-call-tree]"));
    this.form = root.querySelector("[data-composer]");
    this.input = this.form.querySelector("textarea");
    this.busy = false;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send(this.input.value);
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send(this.input.value);
      }
    });
    root.querySelector("[data-new-thread]").addEventListener("click", () => {
      this.thread = "";
      this.messages.replaceChildren();
      this.waiting.replaceChildren();
      this.tree.reset();
      this.status.textContent = "No run yet.";
      history.replaceState(null, "", "/console/chat");
      this.input.focus();
    });
    if (this.thread) this.showState();
    else root.dataset.loaded = "yes";
  }

  add(kind, text) {
    const item = document.createElement("li");
    item.className = kind;
    item.textContent = text;
    this.messages.appendChild(item);
    item.scrollIntoView({ block: "nearest" });
    return item;
  }

  async send(text) {
    text = (text || "").trim();
    if (!text || this.busy) return;
    this.busy = true;
    this.form.querySelector("[data-send]").disabled = true;
    this.waiting.replaceChildren();
    this.add("human", text);
    this.input.value = "";
    this.tree.reset();
    this.status.textContent = "Running…";
    this.root.dataset.state = "running";
    let failed = null;
    try {
      const response = await fetch(`${API}/chat/stream`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf() },
        body: JSON.stringify(this.thread ? { message: text, thread_id: this.thread } : { message: text }),
      });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        failed = body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : `HTTP ${response.status}`;
      } else {
        for await (const { event, data } of readEvents(response)) {
          const [mode, namespace] = splitEvent(event);
          if (mode === "metadata" && data && data.thread_id && !this.thread) {
            this.thread = data.thread_id;
            history.replaceState(null, "", `/console/chat?thread=${this.thread}`);
          } else if (mode === "custom" && data && data.event === "routing") {
            const route = data.routing || {};
            const target = route.target || {};
            this.add("note", `Routed: ${route.intent || "?"} → ${target.kind}${target.name ? " " + target.name : ""}`
              + (route.confidence != null ? ` (confidence ${Number(route.confidence).toFixed(2)})` : ""));
          } else if (mode === "custom") {
            this.tree.handle(data, namespace);
          } else if (mode === "error") {
            failed = (data && (data.message || data.error)) || "the run failed";
          }
        }
      }
    } catch (error) {
      failed = String(error);
    }
    this.status.textContent = failed ? `Failed: ${failed}` : `Finished: ${this.tree.count} calls.`;
    if (failed) this.add("note", `Error: ${failed}`);
    await this.showState({ lastOnly: true });
    this.busy = false;
    this.form.querySelector("[data-send]").disabled = false;
    this.root.dataset.state = "idle";
    if (!this.waiting.querySelector("button")) this.input.focus();
  }

  async showState({ lastOnly = false } = {}) {
    if (!this.thread) return;
    const response = await fetch(`${API}/threads/${this.thread}/state`, { credentials: "same-origin" });
    if (!response.ok) {
      this.add("note", `This conversation cannot be read (${response.status}).`);
      return;
    }
    const state = await response.json();
    const values = state.values || {};
    await this.showMessages(lastOnly);
    this.waiting.replaceChildren();
    const questions = (state.tasks || []).flatMap((task) => task.interrupts || []).map((i) => i.value)
      .filter((value) => value && typeof value === "object");
    for (const question of questions) this.showQuestion(question);
    const handoff = (values.envelope || {}).handoff;
    if (!questions.length && handoff && handoff.kind === "preview") this.showPreview(handoff);
    if (values.solution && typeof values.solution === "object" && !questions.length) {
      const link = document.createElement("p");
      link.innerHTML = `<a data-open-solution href="/console/threads/${this.thread}">Open the solution</a>`;
      this.waiting.appendChild(link);
    }
    const first = this.waiting.querySelector("button");
    if (first) first.focus();
    this.root.dataset.loaded = "yes";
  }

  // The messages as the server renders them (the last answer in sections, raw data behind a click):
  // all of them, or only the newest answer after a message was sent.
  async showMessages(lastOnly) {
    const response = await fetch(`/console/threads/${this.thread}/transcript`, { credentials: "same-origin" });
    if (!response.ok) {
      this.add("note", `The messages cannot be read (${response.status}).`);
      return;
    }
    const holder = document.createElement("template");
    holder.innerHTML = await response.text();
    const items = [...holder.content.children].filter((item) => item.tagName === "LI");
    if (lastOnly) {
      const last = items[items.length - 1];
      if (last && last.classList.contains("ai")) {
        this.messages.appendChild(last);
        last.scrollIntoView({ block: "nearest" });
      }
    } else {
      this.messages.replaceChildren(...items);
    }
  }

  showQuestion(question) {
    const box = document.createElement("div");
    box.className = "question";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Question from the agent");
    const text = document.createElement("p");
    text.innerHTML = "<strong></strong>";
    text.firstChild.textContent = question.question || "The run waits for your answer.";
    box.appendChild(text);
    if (question.draft) box.appendChild(renderValue(question.detail || question.draft));
    const options = (question.options || []).map(String);
    if (options.length) {
      const row = document.createElement("div");
      row.className = "row";
      for (const option of options) {
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = option;
        button.dataset.answer = option;
        button.addEventListener("click", () => this.send(option));
        row.appendChild(button);
      }
      box.appendChild(row);
      const hint = document.createElement("p");
      hint.className = "muted";
      hint.textContent = "Or type another answer below.";
      box.appendChild(hint);
    } else {
      const hint = document.createElement("p");
      hint.className = "muted";
      hint.textContent = "Type your answer below.";
      box.appendChild(hint);
    }
    this.waiting.appendChild(box);
  }

  showPreview(handoff) {
    const box = document.createElement("div");
    box.className = "question preview";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Preview of an action waiting for your decision");
    const proposal = handoff.proposal || {};
    const title = document.createElement("p");
    title.innerHTML = "<strong></strong>";
    title.firstChild.textContent = `Preview of ${proposal.tool || "an action"} (${proposal.risk || "high"} risk): `
      + "nothing has been done yet.";
    box.appendChild(title);
    box.appendChild(renderValue((proposal.preview || {}).detail || proposal.args || {}));
    const row = document.createElement("div");
    row.className = "row";
    const button = (label, onClick) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.addEventListener("click", onClick);
      row.appendChild(b);
      return b;
    };
    button("Accept", () => this.send(PREVIEW_ANSWERS.accept));
    button("Revise", () => {
      this.input.value = "change  to  in the proposal";
      this.input.focus();
      this.input.setSelectionRange(7, 7);
    });
    button("Cancel", () => this.send(PREVIEW_ANSWERS.cancel));
    box.appendChild(row);
    this.waiting.appendChild(box);
  }
}

// An id is shown shortened; its button copies the whole id. The clipboard API needs a secure context
// (https or localhost), so a console served over plain http elsewhere copies through a selected field.
async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const field = document.createElement("textarea");
  field.value = text;
  field.setAttribute("readonly", "");
  field.style.position = "fixed";
  field.style.opacity = "0";
  document.body.appendChild(field);
  field.select();
  const copied = document.execCommand("copy");
  field.remove();
  if (!copied) throw new Error("the browser refused to copy");
}

function setUpCopyButtons() {
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    try {
      await copyText(button.dataset.copy);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Select it";
      const code = button.previousElementSibling;
      if (code) {
        code.textContent = button.dataset.copy;
        window.getSelection()?.selectAllChildren(code);
      }
    }
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setUpCopyButtons();
  drawCharts();
  setUpRuns();
  centreDiagrams();
  const chat = document.querySelector("[data-chat]");
  if (chat) window.consoleChat = new Chat(chat);
});
