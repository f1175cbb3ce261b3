// The dashboard's page logic: fetch the JSON endpoints under /ui/api, fill the tables, point the charts (server-side
// SVG) at the chosen window. Text is always set with textContent: nothing from the server is parsed as HTML.
"use strict";

const $ = (sel) => document.querySelector(sel);
let selected = null;
let timer = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") node.className = v; else if (k.startsWith("data-")) node.setAttribute(k, v); else node[k] = v;
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const int = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
const usd = (n) => (n === null || n === undefined ? "–" : Number(n).toFixed(6));
const pct = (n) => (n === null || n === undefined ? "–" : (100 * n).toFixed(1) + "%");
const pflops = (n) => (n === null || n === undefined ? "–" : Number(n).toFixed(6));
const ms = (s) => (s === null || s === undefined ? "–" : (1000 * s).toFixed(s < 0.01 ? 1 : 0) + " ms");
const clock = (t) => new Date(t * 1000).toISOString().slice(11, 19);
const signed = (n, f) => (n > 0 ? "+" : "") + f(n);

function cell(text, field, cls) { return el("td", { "data-field": field, class: cls }, text); }
function tile(label, value, id, warn) {
  return el("div", { class: "tile" + (warn ? " warn" : ""), "data-tile": id }, el("b", {}, value), el("span", {}, label));
}
function badge(route, blocked) {
  const out = [el("span", { class: "badge " + (route || "none") }, route || "–")];
  if (blocked) out.push(" ", el("span", { class: "badge blocked", title: "privacy kept this step on the edge" }, "privacy-blocked"));
  return out;
}

async function getJSON(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  if (response.status === 401) { location.href = "/ui"; throw new Error("signed out"); }
  const body = await response.json();
  if (!response.ok) throw new Error((body.error && body.error.message) || response.statusText);
  return body;
}

function since() { return $("#since").value; }

function setCharts() {
  const q = "?since=" + encodeURIComponent(since()) + "&_=" + Date.now();
  for (const name of ["rate", "routes", "cost", "tokens", "flops", "exposure"]) $("#chart-" + name).src = "/ui/charts/" + name + ".svg" + q;
}

function renderTraffic(data) {
  const mix = Object.fromEntries(data.route_mix.map((r) => [r.policy, r]));
  const sum = (key) => data.by_policy.reduce((a, r) => a + Number(r[key] || 0), 0);
  const steps = data.route_mix.reduce((a, r) => a + r.steps, 0);
  const blocked = data.route_mix.reduce((a, r) => a + r.privacy_blocked, 0);
  const errors = data.rate.reduce((a, r) => a + r.errors, 0);
  $("#tiles").replaceChildren(
    tile("steps", int(steps), "steps"),
    tile("cloud cost (USD)", usd(sum("cloud_cost_usd")), "cost"),
    tile("cloud tokens raw in", int(sum("cloud_raw_input_tokens")), "raw"),
    tile("cloud cache read", int(sum("cloud_cache_read_tokens")), "cache"),
    tile("cloud output", int(sum("cloud_output_tokens")), "output"),
    tile("edge PFLOPs", pflops(sum("edge_pflops")), "pflops"),
    tile("kept on edge by privacy", int(blocked), "blocked"),
    tile("failed steps", int(errors), "errors", errors > 0),
  );
  const rows = data.by_policy.map((r) => {
    const m = mix[r.group] || { edge: 0, cloud: 0, mixed: 0, privacy_blocked: 0 };
    return el("tr", { "data-policy": r.group },
      cell(r.group, "policy"), cell(int(r.requests), "requests"), cell(int(m.edge), "edge"), cell(int(m.cloud), "cloud"),
      cell(int(m.mixed), "mixed"), cell(int(m.privacy_blocked), "privacy_blocked"), cell(pct(r.cloud_call_rate), "cloud_call_rate"),
      cell(usd(r.cloud_cost_usd), "cloud_cost_usd"), cell(int(r.cloud_raw_input_tokens), "cloud_raw_input_tokens"),
      cell(int(r.cloud_cache_read_tokens), "cloud_cache_read_tokens"), cell(int(r.cloud_output_tokens), "cloud_output_tokens"),
      cell(pct(r.cache_hit_rate), "cache_hit_rate"), cell(pflops(r.edge_pflops), "edge_pflops"), cell(ms(r.mean_latency_s), "mean_latency_s"));
  });
  $("#policies tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colSpan: 14, class: "muted" }, "No steps in this window."))]));
}

function delta(d, f) {
  if (!d) return el("span", { class: "muted", title: "needs at least two sessions in each arm" }, "–");
  const sure = d.ci[0] > 0 || d.ci[1] < 0;
  return el("span", { class: sure ? (d.delta > 0 ? "up" : "down") : "" },
    signed(d.delta, f), " ", el("span", { class: "muted" }, "[" + f(d.ci[0]) + ", " + f(d.ci[1]) + "]"));
}

function renderExperiments(data) {
  const blocks = data.data.map((exp) => {
    const rows = exp.arms.map((a) => el("tr", { "data-arm": a.group },
      cell(a.group + (a.control ? " (control)" : ""), "arm"), cell(int(a.sessions), "sessions"), cell(int(a.requests), "requests"),
      cell(pct(a.cloud_call_rate), "cloud_call_rate"), cell(usd(a.cloud_cost_usd), "cloud_cost_usd"),
      cell(usd(a.cost_per_session), "cost_per_session"), cell(delta(a.cost_delta, usd), "cost_delta"),
      cell(a.completion === null ? "–" : a.completion.toFixed(3) + " n=" + a.graded_sessions, "completion"),
      cell(delta(a.completion_delta, (n) => n.toFixed(3)), "completion_delta"),
      cell(a.exposure === null ? "–" : pct(a.exposure), "exposure"), cell(pflops(a.edge_pflops), "edge_pflops")));
    const q = "?experiment=" + encodeURIComponent(exp.experiment) + "&_=" + Date.now();
    return el("div", { class: "experiment", "data-experiment": exp.experiment },
      el("h3", {}, exp.experiment + (exp.experiment === data.active ? " (active)" : ""), " ",
        el("span", { class: "muted" }, int(exp.calls) + " metered calls; Δ vs " + (exp.control || "–") + ", 95% bootstrap CI over sessions")),
      el("table", { class: "data" },
        el("thead", {}, el("tr", {}, ...["arm", "sessions", "steps", "cloud-call rate", "cloud cost (USD)", "cost / session",
          "Δ cost / session", "completion", "Δ completion", "exposure", "edge PFLOPs"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colSpan: 11, class: "muted" }, "No sessions yet.")))),
      el("div", { class: "charts" },
        el("figure", {}, el("img", { src: "/ui/charts/arms-cost.svg" + q, alt: "cost delta per arm" }), el("figcaption", {}, "Δ cloud cost per session vs control")),
        el("figure", {}, el("img", { src: "/ui/charts/arms-completion.svg" + q, alt: "completion delta per arm" }),
          el("figcaption", {}, "Δ completion vs control (grades: PUT /v1/sessions/{id}/grade)"))));
  });
  if (blocks.length) $("#experiment-list").replaceChildren(...blocks);
}

function renderBudgets(data) {
  const num = (n) => (n === null || n === undefined ? "–" : Number(n).toPrecision(4));
  const limits = data.limits.map((r) => el("tr", { "data-budget": r.scope + ":" + r.name + ":" + r.kind },
    cell(r.scope, "scope"), cell(r.name, "name"), cell(r.kind, "kind"), cell(r.window, "window"),
    cell(num(r.amount), "amount"), cell(num(r.spent), "spent"), cell(num(r.left), "left"), cell(r.resets_at || "session", "resets_at")));
  if (limits.length) $("#budget-table tbody").replaceChildren(...limits);
  const targets = data.targets.map((t) => {
    const cost = t.target_cost_per_session !== undefined;
    return el("tr", { "data-target": t.policy + ":" + (t.arm || "-") },
      cell(t.policy, "policy"), cell(t.arm || "–", "arm"),
      cell(cost ? usd(t.target_cost_per_session) + " / session" : pct(t.target_cloud_rate), "target"),
      cell(cost ? (t.achieved_cost_per_session === null ? "–" : usd(t.achieved_cost_per_session) + " / session")
        : (t.achieved_cloud_rate === null ? "–" : pct(t.achieved_cloud_rate)), "achieved"),
      cell(t.achieved_cloud_rate === null ? "–" : pct(t.achieved_cloud_rate), "achieved_cloud_rate"),
      cell(int(t.steps), "steps"), cell(num(t.threshold), "threshold"));
  });
  if (targets.length) $("#target-table tbody").replaceChildren(...targets);
}

function renderPrivacy(data) {
  if (!data.enabled) { $("#privacy-tiles").replaceChildren(tile("privacy protection", "off", "off", true)); return; }
  const findings = Object.values(data.findings_by_type).reduce((a, acts) => a + Object.values(acts).reduce((x, y) => x + y, 0), 0);
  const raw = Object.values(data.findings_by_type).reduce((a, acts) => a + (acts.audit || 0), 0);
  $("#privacy-tiles").replaceChildren(
    tile("units registered (per session)", int(data.units_registered), "units"),
    tile("units from config files", int(data.units_from_config), "units_config"),
    tile("findings", int(findings), "findings"),
    tile("values left raw (audit)", int(raw), "raw", raw > 0),
    tile("steps kept on edge by a block", int(data.privacy_blocked_steps), "blocked"));
  const rows = Object.entries(data.findings_by_type).map(([type, acts]) => el("tr", { "data-type": type },
    cell(type, "type"), cell(int(acts.pseudonymise || 0), "pseudonymise"), cell(int(acts.mask || 0), "mask"),
    cell(int(acts.audit || 0), "audit", acts.audit ? "up" : ""), cell(int(acts.block || 0), "block")));
  $("#findings tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colSpan: 5, class: "muted" }, "No findings yet."))]));
}

function renderSessions(data) {
  const rows = data.data.map((r) => {
    const tr = el("tr", { "data-session": r.group, class: r.group === selected ? "selected" : "" },
      cell(r.group, "session", "text"), cell(int(r.requests), "requests"), cell(int(r.cloud_calls), "cloud_calls"),
      cell(int(r.edge_calls), "edge_calls"), cell(usd(r.cloud_cost_usd), "cloud_cost_usd"),
      cell(int(r.cloud_raw_input_tokens), "cloud_raw_input_tokens"), cell(int(r.cloud_cache_read_tokens), "cloud_cache_read_tokens"),
      cell(int(r.cloud_output_tokens), "cloud_output_tokens"), cell(pflops(r.edge_pflops), "edge_pflops"),
      cell(r.exposure === null ? "no units" : pct(r.exposure), "exposure", r.exposure ? "up" : ""),
      cell(int(r.privacy_blocked), "privacy_blocked"),
      cell(int(r.inbound || 0), "inbound", r.inbound ? "up" : ""));
    tr.addEventListener("click", () => openSession(r.group));
    return tr;
  });
  $("#session-table tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colSpan: 12, class: "muted" }, "No sessions in this window."))]));
}

function signalText(step) {
  const s = step.signal || {};
  const parts = [];
  if (s.entropy !== undefined && s.entropy !== null) parts.push("entropy " + s.entropy.toFixed(3) + (s.tau !== undefined ? (s.entropy > s.tau ? " > " : " ≤ ") + "τ " + s.tau : ""));
  else if (s.tau !== undefined && s.tau !== null) parts.push("no logprobs (τ " + s.tau + ")");
  if (s.score !== undefined) parts.push("judge score " + (s.score === null ? "none" : Number(s.score).toFixed(2)) + (s.threshold !== undefined ? " vs " + s.threshold : "") + (s.scorer ? " (" + s.scorer + ")" : ""));
  if (s.consultations !== undefined) parts.push("advisor consulted " + s.consultations + "×");
  if (s.coin !== undefined) parts.push("coin " + s.coin + " vs p " + s.p);
  for (const [k, v] of Object.entries(s)) if (!["entropy", "tau", "score", "threshold", "scorer", "consultations", "coin", "p"].includes(k)) parts.push(k + " " + v);
  return parts.join("; ") || "–";
}

function withPlaceholders(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(/\[[A-Z][A-Z0-9_]*_\d+\]/g)) {
    out.push(text.slice(last, m.index), el("span", { class: "placeholder" }, m[0]));
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
}

function bodyView(bodies) {
  if (!bodies.length) return null;
  return bodies.map((b) => el("details", { class: "cloudbody" },
    el("summary", {}, "what the cloud saw (" + (Object.entries(b.findings).map(([a, n]) => a + " " + n).join(", ") || "no findings") + ")"),
    b.body === null ? el("p", { class: "up" }, b.raw_left + " value(s) left raw on this call: body withheld")
      : el("pre", { class: "body" }, withPlaceholders(JSON.stringify(b.body.messages || b.body, null, 2)))));
}

async function openSession(id) {
  selected = id;
  for (const tr of document.querySelectorAll("#session-table tbody tr")) tr.classList.toggle("selected", tr.dataset.session === id);
  const data = await getJSON("/ui/api/sessions/" + encodeURIComponent(id));
  $("#drill").hidden = false;
  $("#drill-id").textContent = id;
  $("#drill-hash").textContent = data.session_hash;
  const p = data.privacy;
  $("#drill-tiles").replaceChildren(
    tile("steps", int(data.steps.length), "steps"),
    tile("cloud calls", int(data.steps.reduce((a, s) => a + s.calls.filter((c) => c.side === "cloud").length, 0)), "cloud_calls"),
    tile("units known", p ? int(p.units_known) : "–", "units"),
    tile("units exposed raw", p ? int(p.units_exposed) : "–", "exposed", p && p.units_exposed > 0),
    tile("exposure", p && p.units_known ? pct(p.exposure) : "–", "exposure"),
    tile("inbound (answers, never sent)", p && p.inbound ? int(p.inbound.total) : "–", "inbound", p && p.inbound && p.inbound.total > 0));
  const rows = data.steps.map((s, i) => {
    const cloud = s.calls.filter((c) => c.side === "cloud");
    const tok = (k) => cloud.reduce((a, c) => a + (c[k] || 0), 0);
    const cost = cloud.reduce((a, c) => a + (c.cost_usd || 0), 0);
    return el("tr", { "data-request": s.request_id },
      cell(String(i + 1), "n"), cell(clock(s.started_at), "time"),
      cell([s.policy, s.arm ? el("div", { class: "muted" }, s.arm) : null], "policy", "text"),
      cell([s.decision || "–", s.reason ? el("div", { class: "muted" }, s.reason) : null], "decision", "text"),
      cell(signalText(s), "signal", "text"),
      cell(badge(s.route, s.fallback), "route", "text"),
      cell([s.calls.map((c) => el("div", {}, c.side + ":" + c.purpose + " " + int(c.prompt_tokens) + "→" + int(c.output_tokens) + (c.status !== 200 ? " ✗" + c.status : ""))), bodyView(s.cloud_bodies)], "calls", "calls"),
      cell(int(tok("raw_input_tokens")) + " / " + int(tok("cache_read_tokens")) + " / " + int(tok("output_tokens")), "cloud_tokens"),
      cell(usd(cost), "cloud_cost_usd"), cell(ms(s.latency_s), "latency"), cell(s.status === null ? "…" : String(s.status), "status"),
      cell(s.trace_id ? el("code", { title: s.trace_id }, s.trace_id.slice(0, 12) + "…") : "–", "trace"));
  });
  $("#steps tbody").replaceChildren(...rows);
}

async function refresh() {
  const q = "?since=" + encodeURIComponent(since());
  try {
    const [overview, experiments, privacy, sessions, budgets] = await Promise.all([
      getJSON("/ui/api/overview" + q), getJSON("/ui/api/experiments"), getJSON("/ui/api/privacy"), getJSON("/ui/api/sessions" + q),
      getJSON("/ui/api/budgets").catch(() => ({ limits: [], targets: [] }))]);  // budgets unreadable: the rest still shows
    renderTraffic(overview);
    renderBudgets(budgets);
    renderExperiments(experiments);
    renderPrivacy(privacy);
    renderSessions(sessions);
    setCharts();
    if (selected) await openSession(selected);
    $("#error").hidden = true;
    $("#updated").textContent = "updated " + new Date().toISOString().slice(11, 19) + " UTC";
    document.body.dataset.loaded = "true";
  } catch (err) {
    $("#error").textContent = "Could not load: " + err.message;
    $("#error").hidden = false;
  }
}

function schedule() {
  clearInterval(timer);
  if ($("#live").checked) timer = setInterval(refresh, 10000);
}

$("#since").addEventListener("change", refresh);
$("#live").addEventListener("change", schedule);
refresh();
schedule();
