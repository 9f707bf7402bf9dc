// The page's markup, style and script. It holds no stored text: the script
// fetches /status.json and /timeline.json (at once, then every refresh
// period) and builds every element from them with textContent and
// setAttribute, never from HTML text, so stored text (resource, host,
// command) shows as text whatever it holds. The page itself is a few
// kilobytes, whatever the size of the lock table. Every time it shows is
// UTC, and says so. What the reader chose (zoom, resource prefix, host,
// the run in the details) is kept in the address's fragment.
#include "serve/page.hpp"

namespace clk::serve {

namespace {

constexpr const char* k_head = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'none'">
<title>clock</title>
<style>
body{font:14px system-ui,sans-serif;margin:1em 2em;color:#222;background:#fafafa}
h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.1em;margin:1.2em 0 .4em}
[hidden]{display:none!important}a{color:#2b6cb0;margin-left:.6em}
#banner{background:#b00;color:#fff;font-weight:bold;padding:8px 12px;margin:.4em 0;border-radius:4px}
#database{font:13px ui-monospace,monospace;color:#445;margin-left:.6em}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;font-size:13px}
th{background:#eee}#holders td:nth-child(-n+4){white-space:nowrap}.mono{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.muted{color:#777}.overdue{color:#b00;font-weight:bold}
#controls button{margin-right:4px}#zoom button.on{font-weight:bold;background:#334;color:#fff}
.group{margin-top:6px;font-weight:bold;color:#445}
.lane{display:flex;align-items:center;height:22px;border-bottom:1px solid #eee}
.lane .name{width:220px;flex:none;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-family:ui-monospace,monospace;font-size:12px}
.track{position:relative;flex:1;height:16px;background:#fff;border:1px solid #ddd}
.bar{position:absolute;top:1px;height:14px;min-width:2px;cursor:pointer;opacity:.9;box-sizing:border-box}
[data-outcome=released]{background:#3a7d44}[data-outcome=held]{background:#2b6cb0}
[data-outcome=failed]{background:#9b2c2c repeating-linear-gradient(-45deg,transparent 0 4px,#0005 4px 7px)}
[data-outcome=expired]{background:#b7791f}[data-outcome=lost]{background:#fff;border:2px dashed #c53030}
[data-outcome=killed]{background:#6b21a8}[data-outcome=forced]{background:#dd6b20 repeating-linear-gradient(45deg,transparent 0 4px,#fff8 4px 7px)}
.mark{position:absolute;top:-3px;width:0;height:0;border-left:5px solid transparent;border-right:5px solid transparent;cursor:pointer;margin-left:-5px}
.mark[data-kind=skipped]{border-top:9px solid #555}.mark[data-kind=timed_out]{border-top:9px solid #d69e2e}.mark[data-kind=killed]{border-top:9px solid #6b21a8}
.legend span{display:inline-block;margin-right:12px}.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle;box-sizing:border-box}
#details{position:fixed;right:1em;bottom:1em;max-width:480px;background:#fff;border:1px solid #999;padding:8px;box-shadow:0 2px 8px #0003}
#axis{display:flex;justify-content:space-between;margin-left:220px;font-size:11px;color:#777}
</style></head><body>
<div id="banner" role="alert" hidden></div>
<h1>clock<span id="database"></span></h1>
<div class="muted">database time <span id="now"></span> &middot; refreshes every <span id="refresh"></span> s &middot; <span id="state">loaded</span> &middot; all times UTC
<a href="status.json">status.json</a><a href="timeline.json">timeline.json</a><a href="history.json">history.json</a><a href="metrics">metrics</a></div>
<h2>Holders and waiters</h2><table id="holders"><thead><tr><th>resource</th><th>mode</th><th>owner</th><th>host</th><th>pid</th><th>user</th><th>command</th><th>token</th><th>held for</th><th>waiters, in order</th></tr></thead><tbody></tbody></table>
<h2>Overdue and expected runs</h2><table id="expected"><thead><tr><th>resource</th><th>every</th><th>last success</th><th>due</th><th>state</th></tr></thead><tbody></tbody></table>
<h2>Timeline</h2>
<div id="controls"><span id="zoom"><button data-zoom="15m">15 min</button><button data-zoom="1h">1 h</button><button data-zoom="6h">6 h</button><button data-zoom="24h">24 h</button><button data-zoom="7d">7 days</button></span>
<input id="prefix" placeholder="resource prefix" size="16"> <select id="host"></select></div>
<div class="legend"><span><i data-outcome="released"></i>released</span><span><i data-outcome="failed"></i>failed (exit &ne; 0 or a signal)</span><span><i data-outcome="held"></i>held</span><span><i data-outcome="expired"></i>expired</span><span><i data-outcome="lost"></i>lost</span><span><i data-outcome="forced"></i>forced</span><span><i data-outcome="killed"></i>killed</span><span>&#9660; skipped (grey), timed out (amber)</span></div>
<div id="truncated" class="muted"></div>
<div id="axis"></div><div id="lanes"></div>
<button id="idle" hidden></button><div id="idle-lanes" hidden></div>
<div id="details" hidden></div>
<script>
"use strict";
const data = {refresh_ms: )html";

constexpr const char* k_tail = R"html(, status: null, timeline: null};
// The reader's choices, kept in the fragment: #zoom=15m|1h|6h|24h|7d (any
// N m, h or d from 15m to 7d), prefix=RESOURCE-PREFIX, host=HOST, run=RESOURCE@TOKEN.
const view = {zoom: "1h", prefix: "", host: "", run: "", idle: false};
const keys = ["zoom", "prefix", "host", "run"];
function span(text) {
  const m = /^(\d+(?:\.\d+)?)(m|h|d)$/.exec(text || "");
  return m ? Math.min(Math.max(m[1] * {m: 6e4, h: 36e5, d: 864e5}[m[2]], 9e5), 6048e5) : 0;
}
function fromHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  for (const k of keys) view[k] = p.get(k) || "";
  if (!span(view.zoom)) view.zoom = "1h";
}
function toHash() {
  const p = new URLSearchParams();
  for (const k of keys) if (view[k]) p.set(k, view[k]);
  history.replaceState(null, "", "#" + p);
}
function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
const $ = (id) => document.getElementById(id);
function utc(ms) {
  return ms === null || ms === undefined || isNaN(ms) ? "" : new Date(ms).toISOString().slice(0, 19).replace("T", " ") + " UTC";
}
function dur(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return Math.max(0, Math.round(ms)) + "ms";
  let left = Math.round(ms / 1000);
  const out = [];
  for (const [n, u] of [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]]) {
    if (left >= n) { out.push(Math.floor(left / n) + u); left %= n; }
  }
  return out.slice(0, 2).join(" ");
}
function label(item) { return (item.namespace ? item.namespace + ":" : "") + item.resource; }
// Names in order, numbers in them as numbers: shard2 before shard10.
function natural(a, b) {
  const x = a.match(/\d+|\D+/g) || [], y = b.match(/\d+|\D+/g) || [];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] === y[i]) continue;
    if (/^\d/.test(x[i]) && /^\d/.test(y[i])) {
      const p = x[i].replace(/^0+/, ""), q = y[i].replace(/^0+/, "");
      if (p.length !== q.length) return p.length - q.length;
    }
    return x[i] < y[i] ? -1 : 1;
  }
  return x.length - y.length;
}
function byName(a, b) {
  const x = [a.namespace, ...a.resource.split(".")], y = [b.namespace, ...b.resource.split(".")];
  for (let i = 0; i < Math.min(x.length, y.length); i++) { const c = natural(x[i], y[i]); if (c) return c; }
  return x.length - y.length;
}
// A prefix of whole segments, as clock status PREFIX; the host exactly.
function shown(item, anyHost) {
  const p = view.prefix;
  return (!p || [item.resource, label(item)].some((n) => n === p || n.startsWith(p + "."))) &&
         (anyHost || !view.host || item.host === view.host);
}
// A run's start, end, duration and how its command ended.
function facts(item) {
  if (item.kind) return [["at", utc(item.at_ms)]];
  const start = item.start_ms, end = item.end_ms;
  const took = item.held_for_ms ?? (start === null ? null : (end ?? data.timeline.now_ms) - start);
  return [["start", start === null ? "before the events read" : utc(start)],
          ["end", end === null ? "still held" : utc(end)],
          ["duration", dur(took) + (end === null ? " so far" : "")],
          ["exit", item.signal ? "ended by " + item.signal : item.exit_code ?? (end === null ? "running" : "not recorded")]];
}
function summary(item) {
  return [label(item) + ": " + (item.outcome || item.kind), ...facts(item).map(([k, v]) => k + " " + v),
          "host " + item.host + ", pid " + item.pid + ", user " + item.user, "token " + item.token + ", owner " + item.owner,
          item.command, item.by ? "by " + item.by : ""].filter(Boolean).join("\n");
}
function runKey(item) { return label(item) + "@" + item.token; }
function details(item) {
  const box = $("details");
  box.replaceChildren();
  box.setAttribute("data-run", runKey(item));
  const table = el("table");
  const rows = [["resource", label(item)], [item.kind ? "kind" : "outcome", item.outcome || item.kind], ...facts(item)];
  for (const [k, v] of Object.entries(item)) {
    if (!k.endsWith("_ms") && !["namespace", "resource", "outcome", "kind", "start", "end", "at", "exit_code", "signal"].includes(k))
      rows.push([k, typeof v === "object" && v !== null ? JSON.stringify(v) : v]);
  }
  for (const [k, v] of rows) {
    const row = el("tr", {"data-field": k});
    row.append(el("th", {}, k), el("td", {class: "mono"}, v));
    table.append(row);
  }
  const close = el("button", {}, "close");
  close.onclick = () => { box.hidden = true; view.run = ""; toHash(); };
  box.append(table, close);
  box.hidden = false;
}
function drawHolders(status) {
  const body = document.querySelector("#holders tbody");
  body.replaceChildren();
  // Maps, never plain objects: a resource named constructor or __proto__
  // would find Object.prototype's members and blank the page.
  const waiters = new Map(), taken = new Map();
  for (const w of status.waiters.filter((w) => shown(w))) {
    if (!waiters.has(label(w))) waiters.set(label(w), []);
    waiters.get(label(w)).push(w);
  }
  for (const h of status.holders) taken.set(label(h), (taken.get(label(h)) || 0) + 1);
  const seen = new Set();
  for (const h of status.holders.filter((h) => shown(h))) {
    const key = label(h);
    const row = el("tr", {"data-resource": h.resource});
    // A semaphore's holder: the slots taken of its size.
    const mode = h.slots ? el("td", {"data-slots": taken.get(key) + "/" + h.slots}, taken.get(key) + "/" + h.slots + " slots") : el("td", {}, h.mode);
    row.append(el("td", {class: "mono"}, key), mode, el("td", {class: "mono"}, h.owner),
               el("td", {class: "mono"}, h.host), el("td", {}, h.pid), el("td", {class: "mono"}, h.user),
               el("td", {class: "mono"}, h.command), el("td", {}, h.token), el("td", {}, dur(h.held_for_ms)));
    const cell = el("td", {class: "mono"});
    if (!seen.has(key)) {
      for (const w of waiters.get(key) || []) cell.append(el("div", {class: "waiter"}, w.place + ". " + w.host + " pid " + w.pid + " " + w.command + " (" + dur(w.waited_ms) + ")"));
    }
    seen.add(key);
    row.append(cell);
    body.append(row);
  }
  for (const [key, list] of waiters) {
    if (seen.has(key)) continue;
    const row = el("tr", {"data-resource": list[0].resource});
    row.append(el("td", {class: "mono"}, key), el("td", {colspan: 8, class: "muted"}, "free, with waiters"));
    const cell = el("td", {class: "mono"});
    for (const w of list) cell.append(el("div", {class: "waiter"}, w.place + ". " + w.host + " pid " + w.pid + " " + w.command));
    row.append(cell);
    body.append(row);
  }
  if (!body.children.length) { const row = el("tr"); row.append(el("td", {colspan: 10, class: "muted"}, "nothing is held")); body.append(row); }
}
function drawExpected(status) {
  const body = document.querySelector("#expected tbody");
  body.replaceChildren();
  for (const e of (status.expected || []).filter((e) => shown(e, true))) {
    const row = el("tr", {"data-resource": e.resource, "data-overdue": e.overdue});
    row.append(el("td", {class: "mono"}, label(e)), el("td", {}, dur(e.every_ms)), el("td", {}, e.last_success ? utc(Date.parse(e.last_success)) : "never"),
               el("td", {}, utc(Date.parse(e.due_at))), el("td", {class: e.overdue ? "overdue" : ""}, e.overdue ? "OVERDUE by " + dur(e.overdue_ms) : "ok"));
    body.append(row);
  }
  if (!body.children.length) { const row = el("tr"); row.append(el("td", {colspan: 5, class: "muted"}, "no expected runs")); body.append(row); }
}
let shownHosts = "";
function drawHosts(status, timeline) {
  const hosts = new Set([view.host].filter(Boolean));
  for (const list of [status.holders, status.waiters, timeline.intervals, timeline.marks]) for (const i of list) hosts.add(i.host);
  const select = $("host"), sorted = [...hosts].sort(natural);
  // Rebuilt only when the hosts change: an open list would close at each refresh.
  if (shownHosts !== JSON.stringify(sorted)) {
    shownHosts = JSON.stringify(sorted);
    select.replaceChildren(el("option", {value: ""}, "all hosts"));
    for (const h of sorted) select.append(el("option", {value: h}, h));
  }
  select.value = view.host;
}
function drawTimeline(timeline, status) {
  const now = timeline.now_ms, span_ms = span(view.zoom), from = now - span_ms;
  const axis = $("axis");
  axis.replaceChildren();
  for (let i = 0; i <= 4; i++) {
    const t = new Date(from + span_ms * i / 4).toISOString();
    axis.append(el("span", {}, (span_ms > 864e5 ? t.slice(5, 16).replace("T", " ") : t.slice(11, 16)) + (i === 4 ? " UTC" : "")));
  }
  $("truncated").textContent = timeline.truncated ? "Only the newest history events are drawn: older holds may be missing." : "";
  const byLane = new Map();
  const lane = (item) => {
    const key = item.namespace + "\u0000" + item.resource;
    if (!byLane.has(key)) byLane.set(key, {item, bars: [], marks: [], drawn: 0});
    return byLane.get(key);
  };
  for (const i of timeline.intervals.filter((i) => shown(i))) lane(i).bars.push(i);
  for (const m of timeline.marks.filter((m) => shown(m))) lane(m).marks.push(m);
  const held = new Set(status.holders.filter((h) => shown(h)).map((h) => h.namespace + "\u0000" + h.resource));
  const lanes = $("lanes"), idle = $("idle-lanes"), groups = new Map();
  lanes.replaceChildren();
  idle.replaceChildren();
  let found = null;
  for (const entry of [...byLane.values()].sort((a, b) => byName(a.item, b.item))) {
    const row = el("div", {class: "lane", "data-namespace": entry.item.namespace, "data-resource": entry.item.resource});
    row.append(el("div", {class: "name", title: label(entry.item)}, label(entry.item)));
    const track = el("div", {class: "track"});
    const place = (start, end) => "left:" + ((start - from) / span_ms * 100).toFixed(3) + "%" + (end === undefined ? "" : ";width:" + Math.max((end - start) / span_ms * 100, 0.05).toFixed(3) + "%");
    for (const b of entry.bars) {
      const start = b.start_ms === null ? from : Math.max(b.start_ms, from);
      const end = b.end_ms === null ? now : b.end_ms;
      if (runKey(b) === view.run) found = b;
      if (end < from) continue;
      const bar = el("div", {class: "bar", "data-outcome": b.outcome, "data-token": b.token, "data-host": b.host, "data-exit": b.signal || (b.exit_code ?? ""), title: summary(b), style: place(start, end)});
      bar.onclick = () => { view.run = runKey(b); toHash(); details(b); };
      track.append(bar);
      entry.drawn++;
    }
    for (const m of entry.marks) {
      if (m.at_ms < from) continue;
      const mark = el("div", {class: "mark", "data-kind": m.kind, "data-host": m.host, title: summary(m), style: place(m.at_ms)});
      mark.onclick = () => details(m);
      track.append(mark);
      entry.drawn++;
    }
    row.append(track);
    // Idle: no run in the window and nothing held; folded behind a toggle.
    const into = entry.drawn || held.has(entry.item.namespace + "\u0000" + entry.item.resource) ? lanes : idle;
    if (into === idle) row.setAttribute("data-idle", "");
    const g = entry.item.namespace + ":" + entry.item.resource.split(".")[0];
    if (groups.get(into) !== g) { groups.set(into, g); into.append(el("div", {class: "group", "data-group": g}, g)); }
    into.append(row);
  }
  const folded = idle.querySelectorAll(".lane").length, toggle = $("idle");
  toggle.hidden = !folded;
  toggle.textContent = folded + " idle" + (view.idle ? " (hide)" : " (show)");
  toggle.setAttribute("aria-expanded", view.idle);
  idle.hidden = !view.idle;
  if (found) details(found);
}
function draw() {
  $("now").textContent = utc(Date.parse(data.status.now));
  $("database").textContent = data.status.database || "";
  $("refresh").textContent = data.refresh_ms / 1000;
  $("prefix").value = view.prefix;
  drawHosts(data.status, data.timeline);
  drawHolders(data.status);
  drawExpected(data.status);
  drawTimeline(data.timeline, data.status);
  for (const b of document.querySelectorAll("#zoom button")) b.className = b.dataset.zoom === view.zoom ? "on" : "";
}
const change = (what) => { Object.assign(view, what); toHash(); if (data.status) draw(); };
for (const b of document.querySelectorAll("#zoom button")) b.onclick = () => change({zoom: b.dataset.zoom});
$("prefix").oninput = () => change({prefix: $("prefix").value.trim()});
$("host").onchange = () => change({host: $("host").value});
$("idle").onclick = () => change({idle: !view.idle});
window.onhashchange = () => { fromHash(); if (data.status) draw(); };
// A failed read shows a banner until a read succeeds again: 503 is the
// database, anything else clock serve itself.
function banner(text) {
  $("banner").hidden = !text;
  $("banner").textContent = text && text + (data.status ? " The page shows the read of " + utc(Date.parse(data.status.now)) + "." : "");
}
async function refresh() {
  try {
    const [status, timeline] = await Promise.all(["status.json", "timeline.json"].map(async (p) => {
      const r = await fetch(p, {cache: "no-store"});
      if (r.status === 503) throw new Error("The database cannot be read: " + (await r.text()).trim());
      if (!r.ok) throw new Error(p + ": HTTP " + r.status);
      return r.json();
    }));
    data.status = status; data.timeline = timeline;
    $("state").textContent = "updated " + utc(Date.now());
    banner("");
    draw();
  } catch (e) {
    $("state").textContent = "refresh failed";
    banner(e.message.startsWith("The database") ? e.message : "clock serve cannot be reached: " + e.message + ".");
  }
}
fromHash();
refresh();
setInterval(refresh, data.refresh_ms);
</script></body></html>
)html";

}  // namespace

std::string render_page(std::chrono::milliseconds refresh) {
  return std::string(k_head) + std::to_string(refresh.count()) + k_tail;
}

}  // namespace clk::serve
