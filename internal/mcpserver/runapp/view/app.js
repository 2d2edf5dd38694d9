// The run view of mcp-code-runner: an MCP App (io.modelcontextprotocol/ui)
// that the host renders beside run_code, the execution tools and the session
// tools. It speaks the Apps protocol (JSON-RPC over postMessage) with its
// host directly, has no dependency and no network of its own: everything
// reaches the server through the host (tools/call, resources/read).
// Program output, code and file contents are only ever set as text
// (textContent), never parsed as markup.
"use strict";
(function () {
  const PROTOCOL = "2026-01-26";
  const APP = { name: "mcp-code-runner-run-view", version: "1" };
  const host = window.parent;
  let nextId = 1;
  const pending = new Map();
  const state = {
    tool: "", args: null, result: null, content: [], running: false,
    cancelled: "", note: "", exec: null, polling: false, session: null, error: "",
    // What the host lets the view do: call the server's tools, read its
    // resources, download files. Until it says, nothing.
    caps: {},
  };

  // --- the protocol ---------------------------------------------------
  function send(msg) { host.postMessage(msg, "*"); }
  function request(method, params) {
    const id = nextId++;
    send({ jsonrpc: "2.0", id, method, params: params || {} });
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method, params: params || {} }); }

  window.addEventListener("message", (ev) => {
    if (ev.source !== host) return;
    const m = ev.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && !m.method) {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(m.error.message || "request failed"));
      else p.resolve(m.result);
      return;
    }
    if (m.id !== undefined) { // a request from the host
      if (m.method === "ui/resource-teardown" || m.method === "ping") send({ jsonrpc: "2.0", id: m.id, result: {} });
      else send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } });
      return;
    }
    onNotification(m.method, m.params || {});
  });

  function onNotification(method, p) {
    switch (method) {
      case "ui/notifications/tool-input":
      case "ui/notifications/tool-input-partial":
        state.args = p.arguments || state.args;
        if (!state.result) state.running = true;
        break;
      case "ui/notifications/tool-result":
        takeResult(p);
        break;
      case "ui/notifications/tool-cancelled":
        state.running = false;
        state.cancelled = p.reason || "cancelled";
        break;
      case "ui/notifications/host-context-changed":
        applyContext(p);
        return;
      default:
        return;
    }
    render();
  }

  // takeResult reads a CallToolResult: structuredContent first, else the
  // JSON text block the server always sends beside it.
  function takeResult(r) {
    state.running = false;
    state.content = r.content || [];
    let s = r.structuredContent;
    if (!s) {
      for (const c of state.content) {
        if (c.type === "text") { try { s = JSON.parse(c.text); } catch (e) { /* a summary line */ } }
      }
    }
    state.error = r.isError ? textOf(r) : "";
    state.result = s || null;
    if (s && s.execution_id) {
      state.exec = s;
      if (s.status === "running" && state.caps.serverTools) poll(s.execution_id);
    }
    if (s && s.session_id && !s.run_id && s.language) state.session = s;
    if (s && s.session && s.session.session_id) state.session = s.session;
  }
  function textOf(r) { return (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n"); }

  function applyContext(ctx) {
    if (!ctx) return;
    const root = document.documentElement;
    if (ctx.theme) { root.dataset.theme = ctx.theme; root.style.colorScheme = ctx.theme; }
    const vars = ctx.styles && ctx.styles.variables;
    if (vars) for (const k of Object.keys(vars)) if (k.startsWith("--") && vars[k]) root.style.setProperty(k, vars[k]);
  }

  async function callTool(name, args) {
    const r = await request("tools/call", { name, arguments: args });
    if (r.isError) throw new Error(textOf(r) || name + " failed");
    return r;
  }

  // poll streams an execution's output: get_execution with the offsets of
  // what was seen, waiting up to a second for the end each time.
  async function poll(id) {
    if (state.polling) return;
    state.polling = true;
    state.running = true;
    let out = state.exec ? state.exec.stdout || "" : "";
    let err = state.exec ? state.exec.stderr || "" : "";
    try {
      for (;;) {
        const r = await callTool("get_execution", {
          execution_id: id, wait_seconds: 1,
          stdout_offset: (state.exec.stdout_offset || 0) + byteLength(state.exec.stdout || ""),
          stderr_offset: (state.exec.stderr_offset || 0) + byteLength(state.exec.stderr || ""),
        });
        const s = r.structuredContent || JSON.parse(r.content[r.content.length - 1].text);
        out += s.stdout || ""; err += s.stderr || "";
        state.exec = s;
        state.stream = { stdout: out, stderr: err };
        if (s.status !== "running") {
          state.result = s; state.content = r.content || []; state.running = false;
          render();
          return;
        }
        render();
      }
    } catch (e) {
      state.note = String(e.message || e);
      state.running = false;
      render();
    } finally {
      state.polling = false;
    }
  }
  function byteLength(s) { return new TextEncoder().encode(s).length; }

  // --- actions ---------------------------------------------------------
  function runArgs() {
    const a = state.args || {};
    const r = {};
    for (const k of ["language", "code", "stdin", "args", "env", "files", "timeout_seconds", "packages", "network", "isolation"]) {
      if (a[k] !== undefined) r[k] = a[k];
    }
    return r;
  }
  async function rerun() {
    const args = runArgs();
    if (!args.code) return;
    reset();
    state.running = true; render();
    try {
      if (state.args && state.args.session_id) {
        takeResult(await callTool("run_code", Object.assign(args, { session_id: state.args.session_id })));
      } else {
        const r = await callTool("start_execution", args);
        takeResult(r);
      }
    } catch (e) { state.note = String(e.message || e); state.running = false; }
    render();
  }
  async function cancel() {
    const id = state.exec && state.exec.execution_id;
    if (!id) return;
    try { takeResult(await callTool("cancel_execution", { execution_id: id })); }
    catch (e) { state.note = String(e.message || e); }
    render();
  }
  async function openInSession() {
    const args = runArgs();
    if (!args.code) return;
    try {
      const c = await callTool("create_session", { language: args.language });
      const sid = c.structuredContent.session_id;
      reset();
      state.args = Object.assign(args, { session_id: sid });
      state.running = true; render();
      takeResult(await callTool("run_code", state.args));
      state.note = "opened in session " + sid;
    } catch (e) { state.note = String(e.message || e); state.running = false; }
    render();
  }
  function reset() {
    state.result = null; state.content = []; state.exec = null; state.stream = null;
    state.cancelled = ""; state.note = ""; state.error = "";
  }

  // --- rendering -------------------------------------------------------
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function button(label, fn, id) {
    const b = el("button", "btn", label);
    b.type = "button";
    if (id) b.id = id;
    b.addEventListener("click", fn);
    return b;
  }

  const KEYWORDS = new Set(("and as assert async await break case catch class const continue def default del do elif else " +
    "except export extends finally fn for from func function go if impl import in is lambda let match mut new nil " +
    "None not null or package pass private public raise return self static struct switch this throw True False true false " +
    "try type typeof use var void while with yield").split(" "));
  const TOKEN = /(#[^\n]*|\/\/[^\n]*|\/\*[\s\S]*?\*\/|"""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|\b\d[\d_.]*(?:e[+-]?\d+)?\b|\b[A-Za-z_]\w*\b)/g;

  // highlight appends code to pre as text nodes and spans; a comment
  // marker is # for the languages that use it, // for the others.
  function highlight(pre, code, language) {
    const hashComments = /^(python|ruby|bash|sh|r|perl|julia|elixir|nim|crystal|powershell)$/i.test(language || "");
    let last = 0;
    code.replace(TOKEN, (tok, _g, at) => {
      if (at > last) pre.appendChild(document.createTextNode(code.slice(last, at)));
      let cls = "";
      if (tok[0] === "#") cls = hashComments ? "c" : "";
      else if (tok.startsWith("//") || tok.startsWith("/*")) cls = hashComments ? "" : "c";
      else if (/^["'`]/.test(tok)) cls = "s";
      else if (/^\d/.test(tok)) cls = "n";
      else if (KEYWORDS.has(tok)) cls = "k";
      pre.appendChild(cls ? el("span", "tok-" + cls, tok) : document.createTextNode(tok));
      last = at + tok.length;
      return tok;
    });
    if (last < code.length) pre.appendChild(document.createTextNode(code.slice(last)));
  }

  function badge(status) {
    const b = el("span", "badge", status || "waiting");
    b.id = "status";
    b.dataset.status = status || "";
    return b;
  }

  function render() {
    const root = document.getElementById("app");
    root.replaceChildren();
    const s = state.result || {};
    const view = state.exec ? "execution" : s.sessions ? "sessions" : (s.run_id || state.args && state.args.code) ? "run" : (s.session_id || s.session) ? "session" : "other";
    if (view === "sessions") return renderSessions(root, s.sessions);
    if (view === "session" && !s.run_id) return renderSession(root, s.session || s);
    if (view === "other" && state.result) {
      const pre = el("pre", "out", JSON.stringify(state.result, null, 2));
      root.appendChild(pre);
      return notes(root);
    }
    renderRun(root);
  }

  function renderRun(root) {
    const args = state.args || {};
    const exec = state.exec;
    const res = exec ? exec.result : state.result;
    const status = state.cancelled ? "cancelled" : exec ? exec.status : res ? res.status : state.running ? "running" : "";
    const head = el("header", "head");
    head.appendChild(el("strong", "lang", (res && res.language) || (exec && exec.language) || args.language || "run"));
    if (res && res.runtime_version) head.appendChild(el("span", "muted", res.runtime_version));
    head.appendChild(badge(state.running && !exec ? "running" : status));
    if (res && res.exit_code !== undefined) head.appendChild(el("span", "exit", "exit " + res.exit_code + (res.signal ? " (" + res.signal + ")" : "")));
    if (args.session_id) head.appendChild(el("span", "muted", "session " + args.session_id));
    root.appendChild(head);
    if (res) root.appendChild(timings(res));

    if (args.code) {
      const pre = el("pre", "code");
      pre.id = "code";
      highlight(pre, String(args.code), res && res.language || args.language);
      root.appendChild(pre);
    }
    // The actions call the server's tools through the host: offered only
    // when the host can.
    if (state.caps.serverTools) {
      const actions = el("div", "actions");
      if (args.code) actions.appendChild(button("Re-run", rerun, "rerun"));
      if (exec && exec.status === "running") actions.appendChild(button("Cancel", cancel, "cancel"));
      if (args.code && !args.session_id) actions.appendChild(button("Open in a session", openInSession, "open-session"));
      root.appendChild(actions);
    }

    if (res && res.compile) {
      const c = res.compile;
      root.appendChild(el("h3", "", "compile: exit " + c.exit_code + " in " + c.duration_ms + " ms" + (res.type_errors ? ", " + res.type_errors + " type errors" : "")));
      if (c.stdout) root.appendChild(stream("compile-stdout", c.stdout));
      if (c.stderr) root.appendChild(stream("compile-stderr", c.stderr, "err"));
    }
    const out = exec ? (state.stream ? state.stream.stdout : exec.stdout) : res ? res.stdout : "";
    const err = exec ? (state.stream ? state.stream.stderr : exec.stderr) : res ? res.stderr : "";
    const outRes = exec && res ? res.stdout : null;
    root.appendChild(el("h3", "", "output"));
    root.appendChild(stream("stdout", outRes && outRes.length > (out || "").length ? outRes : out || ""));
    if (err || res && res.stderr) root.appendChild(stream("stderr", err || res.stderr, "err"));
    if (res && res.value) root.appendChild(stream("value", "→ " + res.value));
    if (res && res.message) root.appendChild(el("p", "muted", res.message));
    if (exec && exec.error) root.appendChild(el("p", "err", exec.error));
    renderArtifacts(root, res);
    notes(root);
  }

  function timings(res) {
    const t = el("div", "timings");
    t.id = "timings";
    const parts = [];
    if (res.duration_ms !== undefined) parts.push("run " + res.duration_ms + " ms");
    if (res.cpu_time_ms !== undefined) parts.push("cpu " + res.cpu_time_ms + " ms");
    if (res.max_memory_kb) parts.push("memory " + Math.round(res.max_memory_kb / 1024) + " MiB");
    if (res.total_ms !== undefined) parts.push("total " + res.total_ms + " ms");
    if (res.isolation) parts.push(res.isolation);
    t.textContent = parts.join(" · ");
    return t;
  }

  function stream(id, text, cls) {
    const pre = el("pre", "out" + (cls ? " " + cls : ""), text);
    pre.id = id;
    return pre;
  }

  function notes(root) {
    if (state.error) root.appendChild(el("p", "err", state.error));
    if (state.cancelled) root.appendChild(el("p", "muted", "the host cancelled the call: " + state.cancelled));
    if (state.note) { const p = el("p", "muted", state.note); p.id = "note"; root.appendChild(p); }
  }

  // renderArtifacts shows images inline (the result's image blocks), CSV
  // and JSON files as tables (read through the host), and offers every
  // other file as a download the host makes.
  function renderArtifacts(root, res) {
    const arts = (res && res.artifacts) || [];
    const images = state.content.filter((c) => c.type === "image");
    if (!arts.length && !images.length) return;
    const box = el("section", "artifacts");
    box.id = "artifacts";
    box.appendChild(el("h3", "", "files"));
    for (const img of images) box.appendChild(plot(img.mimeType, img.data));
    // An execution's result carries no image blocks: its images are read
    // through the host.
    if (!images.length && state.caps.serverResources) {
      for (const a of arts) if (a.uri && /^image\/(png|jpeg|gif|webp)$/.test(a.mime_type || "")) {
        if (blobs.has(a.uri)) {
          if (blobs.get(a.uri)) box.appendChild(plot(a.mime_type, blobs.get(a.uri)));
          continue;
        }
        blobs.set(a.uri, "");
        request("resources/read", { uri: a.uri }).then((r) => {
          const c = r.contents && r.contents[0];
          if (c && c.blob) { blobs.set(a.uri, c.blob); render(); }
        }).catch(() => {});
      }
    }
    for (const a of arts) {
      const row = el("div", "artifact");
      row.appendChild(el("code", "", a.path));
      row.appendChild(el("span", "muted", a.size + " bytes" + (a.mime_type ? " · " + a.mime_type : "")));
      if (a.skipped) row.appendChild(el("span", "muted", a.skipped));
      const isTable = /(^text\/csv|^text\/tab-separated-values|^application\/json)/.test(a.mime_type || "");
      if (a.uri && isTable && state.caps.serverResources) {
        const holder = el("div", "table-holder");
        row.appendChild(holder);
        loadTable(a, holder);
      } else if (a.uri && state.caps.downloadFile && !/^image\//.test(a.mime_type || "")) {
        row.appendChild(button("Download", () => request("ui/download-file", {
          contents: [{ type: "resource_link", uri: a.uri, name: a.path, mimeType: a.mime_type }],
        }).catch((e) => { state.note = String(e.message || e); render(); })));
      }
      box.appendChild(row);
    }
    root.appendChild(box);
  }

  function plot(mime, data) {
    const i = el("img", "plot");
    i.alt = "image the run produced";
    i.src = "data:" + mime + ";base64," + data;
    return i;
  }

  const tables = new Map();
  const blobs = new Map();
  async function loadTable(a, holder) {
    let rows = tables.get(a.uri);
    if (!rows) {
      try {
        const r = await request("resources/read", { uri: a.uri });
        const text = (r.contents && r.contents[0] && r.contents[0].text) || "";
        rows = /json/.test(a.mime_type) ? jsonRows(text) : csvRows(text, a.mime_type === "text/tab-separated-values" ? "\t" : ",");
      } catch (e) { rows = [["(could not read: " + (e.message || e) + ")"]]; }
      tables.set(a.uri, rows);
    }
    holder.replaceChildren(table(rows.slice(0, 201)));
  }
  function csvRows(text, sep) {
    const rows = [];
    let row = [], cell = "", q = false;
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (q) {
        if (ch === '"' && text[i + 1] === '"') { cell += '"'; i++; }
        else if (ch === '"') q = false;
        else cell += ch;
      } else if (ch === '"') q = true;
      else if (ch === sep) { row.push(cell); cell = ""; }
      else if (ch === "\n") { row.push(cell.replace(/\r$/, "")); rows.push(row); row = []; cell = ""; }
      else cell += ch;
    }
    if (cell || row.length) { row.push(cell); rows.push(row); }
    return rows;
  }
  function jsonRows(text) {
    let v = JSON.parse(text);
    if (!Array.isArray(v)) v = [v];
    const keys = [];
    for (const o of v) if (o && typeof o === "object" && !Array.isArray(o)) for (const k of Object.keys(o)) if (!keys.includes(k)) keys.push(k);
    if (!keys.length) return [["value"]].concat(v.map((x) => [JSON.stringify(x)]));
    return [keys].concat(v.map((o) => keys.map((k) => o && o[k] !== undefined ? (typeof o[k] === "object" ? JSON.stringify(o[k]) : String(o[k])) : "")));
  }
  function table(rows) {
    const t = el("table", "data");
    rows.forEach((r, i) => {
      const tr = el("tr");
      for (const c of r) tr.appendChild(el(i === 0 ? "th" : "td", "", c));
      t.appendChild(tr);
    });
    return t;
  }

  function renderSession(root, s) {
    const head = el("header", "head");
    head.appendChild(el("strong", "lang", s.language || "session"));
    head.appendChild(badge(s.paused ? "paused" : s.closed ? "closed" : "live"));
    head.appendChild(el("span", "muted", "session " + s.session_id));
    root.appendChild(head);
    const dl = el("dl", "facts");
    for (const [k, v] of [["calls", s.calls], ["network", s.network], ["isolation", s.isolation],
      ["created", s.created_at], ["expires", s.expires_at],
      ["packages", (s.packages || []).map((p) => p.name + (p.version ? "==" + p.version : "")).join(", ")]]) {
      if (v === undefined || v === "" || v === null) continue;
      dl.appendChild(el("dt", "", k)); dl.appendChild(el("dd", "", v));
    }
    root.appendChild(dl);
    const r = state.result || {};
    if (r.forked_from) root.appendChild(el("p", "muted", "forked from " + r.forked_from + " (" + r.mode + ")"));
    if (r.files_kept !== undefined) root.appendChild(el("p", "muted", r.files_kept + " files kept, " + r.cells_to_run + " cells to replay"));
    notes(root);
  }

  function renderSessions(root, list) {
    root.appendChild(el("h3", "", list.length + " live sessions"));
    const rows = [["session", "language", "calls", "state", "last used"]];
    for (const s of list) rows.push([s.session_id, s.language, String(s.calls), s.paused ? "paused" : "live", s.last_used_at]);
    root.appendChild(table(rows));
    notes(root);
  }

  // Tell the host the view's height whenever it changes.
  new ResizeObserver(() => notify("ui/notifications/size-changed", {
    width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
  })).observe(document.documentElement);

  render();
  request("ui/initialize", { appInfo: APP, appCapabilities: {}, protocolVersion: PROTOCOL })
    .then((r) => {
      state.caps = (r && r.hostCapabilities) || {};
      applyContext(r && r.hostContext);
      notify("ui/notifications/initialized", {});
      render();
    })
    .catch((e) => { state.note = "host: " + (e.message || e); render(); });
})();
