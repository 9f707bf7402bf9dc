// The page's markup, style and script. It holds no stored text: the script
// fetches /status.json and /timeline.json (at once, then every refresh
// period) and builds every element from them with textContent and
// setAttribute, never from HTML text, so stored text (resource, host,
// command) shows as text whatever it holds. The page itself is a few
// kilobytes, whatever the size of the lock table.
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
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;font-size:13px}
th{background:#eee}.mono{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.muted{color:#777}.overdue{color:#b00;font-weight:bold}
#zoom button{margin-right:4px}#zoom button.on{font-weight:bold;background:#334;color:#fff}
.group{margin-top:6px;font-weight:bold;color:#445}
.lane{display:flex;align-items:center;height:22px;border-bottom:1px solid #eee}
.lane .name{width:220px;flex:none;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-family:ui-monospace,monospace;font-size:12px}
.track{position:relative;flex:1;height:16px;background:#fff;border:1px solid #ddd}
.bar{position:absolute;top:1px;height:14px;min-width:2px;cursor:pointer;opacity:.9}
.bar[data-outcome=released]{background:#3a7d44}.bar[data-outcome=held]{background:#2b6cb0}
.bar[data-outcome=expired]{background:#b7791f}.bar[data-outcome=lost]{background:#c53030;background-image:repeating-linear-gradient(45deg,transparent 0 4px,#fff6 4px 7px)}
.bar[data-outcome=killed]{background:#6b21a8}.bar[data-outcome=forced]{background:#dd6b20}
.bar[data-outcome=failed]{background:#9b2c2c;background-image:repeating-linear-gradient(-45deg,transparent 0 4px,#0004 4px 7px)}
.mark{position:absolute;top:-3px;width:0;height:0;border-left:5px solid transparent;border-right:5px solid transparent;cursor:pointer;margin-left:-5px}
.mark[data-kind=skipped]{border-top:9px solid #555}.mark[data-kind=timed_out]{border-top:9px solid #d69e2e}.mark[data-kind=killed]{border-top:9px solid #6b21a8}
.legend span{display:inline-block;margin-right:12px}.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}
#details{position:fixed;right:1em;bottom:1em;max-width:480px;background:#fff;border:1px solid #999;padding:8px;box-shadow:0 2px 8px #0003;display:none}
#axis{display:flex;justify-content:space-between;margin-left:220px;font-size:11px;color:#777}
</style></head><body>
<h1>clock</h1>
<div class="muted">database time <span id="now"></span> &middot; refreshes every <span id="refresh"></span> s &middot; <span id="state">loaded</span></div>
<h2>Holders and waiters</h2><table id="holders"><thead><tr><th>resource</th><th>mode</th><th>owner</th><th>host</th><th>pid</th><th>user</th><th>command</th><th>token</th><th>held for</th><th>waiters, in order</th></tr></thead><tbody></tbody></table>
<h2>Overdue and expected runs</h2><table id="expected"><thead><tr><th>resource</th><th>every</th><th>last success</th><th>due</th><th>state</th></tr></thead><tbody></tbody></table>
<h2>Timeline</h2>
<div id="zoom"><button data-hours="1">last hour</button><button data-hours="6">6 h</button><button data-hours="24">24 h</button><button data-hours="168">last week</button></div>
<div class="legend"><span><i style="background:#3a7d44"></i>released</span><span><i style="background:#9b2c2c"></i>failed (exit &ne; 0 or a signal)</span><span><i style="background:#2b6cb0"></i>held</span><span><i style="background:#b7791f"></i>expired</span><span><i style="background:#c53030"></i>lost</span><span><i style="background:#6b21a8"></i>killed</span><span><i style="background:#dd6b20"></i>forced</span><span>&#9660; skipped (grey), timed out (amber)</span></div>
<div id="truncated" class="muted"></div>
<div id="axis"></div><div id="lanes"></div>
<div id="details"></div>
<script>
"use strict";
const data = {refresh_ms: )html";

constexpr const char* k_tail = R"html(, status: null, timeline: null};
// #hours=N in the address picks the first zoom (the screenshot uses a few minutes).
let hours = Number(new URLSearchParams(location.hash.slice(1)).get("hours")) || 1;
function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
function dur(ms) {
  if (ms === null || ms === undefined) return "";
  const s = Math.round(ms / 1000);
  if (s < 120) return s + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  if (s < 172800) return Math.round(s / 3600) + "h";
  return Math.round(s / 86400) + "d";
}
function label(item) { return (item.namespace ? item.namespace + ":" : "") + item.resource; }
function details(item) {
  const box = document.getElementById("details");
  box.replaceChildren();
  const table = el("table");
  for (const [k, v] of Object.entries(item)) {
    if (k.endsWith("_ms")) continue;
    const row = el("tr");
    row.append(el("th", {}, k), el("td", {class: "mono"}, typeof v === "object" && v !== null ? JSON.stringify(v) : v));
    table.append(row);
  }
  const close = el("button", {}, "close");
  close.onclick = () => { box.style.display = "none"; };
  box.append(table, close);
  box.style.display = "block";
}
function summary(item) {
  const ended = item.signal ? "ended by " + item.signal
      : item.exit_code !== undefined && item.exit_code !== null ? "exit " + item.exit_code : "";
  const took = dur(item.held_for_ms) ? "held " + dur(item.held_for_ms) : "";
  return [label(item), item.outcome || item.kind, ended, took, "host " + item.host, "pid " + item.pid,
          "token " + item.token, "owner " + item.owner, item.command, item.by ? "by " + item.by : ""]
      .filter(Boolean).join("\n");
}
function drawHolders(status) {
  const body = document.querySelector("#holders tbody");
  body.replaceChildren();
  // A Map, never a plain object: a resource named constructor or __proto__
  // would find Object.prototype's members and blank the page.
  const waiters = new Map();
  for (const w of status.waiters) {
    if (!waiters.has(label(w))) waiters.set(label(w), []);
    waiters.get(label(w)).push(w);
  }
  const seen = new Set();
  for (const h of status.holders) {
    const key = label(h);
    const row = el("tr", {"data-resource": h.resource});
    row.append(el("td", {class: "mono"}, key), el("td", {}, h.mode), el("td", {class: "mono"}, h.owner),
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
  for (const e of status.expected || []) {
    const row = el("tr", {"data-resource": e.resource, "data-overdue": e.overdue});
    row.append(el("td", {class: "mono"}, label(e)), el("td", {}, dur(e.every_ms)), el("td", {}, e.last_success || "never"),
               el("td", {}, e.due_at), el("td", {class: e.overdue ? "overdue" : ""}, e.overdue ? "OVERDUE by " + dur(e.overdue_ms) : "ok"));
    body.append(row);
  }
  if (!body.children.length) { const row = el("tr"); row.append(el("td", {colspan: 5, class: "muted"}, "no expected runs")); body.append(row); }
}
function drawTimeline(timeline) {
  const now = timeline.now_ms, from = now - hours * 3600e3, span = now - from;
  const lanes = document.getElementById("lanes");
  lanes.replaceChildren();
  const axis = document.getElementById("axis");
  axis.replaceChildren();
  for (let i = 4; i >= 0; i--) axis.append(el("span", {}, i ? "-" + dur(span * i / 4) : "now"));
  document.getElementById("truncated").textContent = timeline.truncated ? "Only the newest history events are drawn: older holds may be missing." : "";
  const byLane = new Map();
  const lane = (item) => {
    const key = item.namespace + "\u0000" + item.resource;
    if (!byLane.has(key)) byLane.set(key, {item, bars: [], marks: []});
    return byLane.get(key);
  };
  for (const i of timeline.intervals) lane(i).bars.push(i);
  for (const m of timeline.marks) lane(m).marks.push(m);
  const keys = [...byLane.keys()].sort();
  let group = null;
  for (const key of keys) {
    const entry = byLane.get(key);
    const g = entry.item.namespace + ":" + entry.item.resource.split(".")[0];
    if (g !== group) { group = g; lanes.append(el("div", {class: "group", "data-group": g}, g)); }
    const row = el("div", {class: "lane", "data-namespace": entry.item.namespace, "data-resource": entry.item.resource});
    row.append(el("div", {class: "name", title: label(entry.item)}, label(entry.item)));
    const track = el("div", {class: "track"});
    for (const b of entry.bars) {
      const start = b.start_ms === null ? from : Math.max(b.start_ms, from);
      const end = b.end_ms === null ? now : b.end_ms;
      if (end < from) continue;
      const bar = el("div", {class: "bar", "data-outcome": b.outcome, "data-token": b.token, title: summary(b),
                             style: "left:" + ((start - from) / span * 100).toFixed(3) + "%;width:" + Math.max((end - start) / span * 100, 0.05).toFixed(3) + "%"});
      bar.onclick = () => details(b);
      track.append(bar);
    }
    for (const m of entry.marks) {
      if (m.at_ms < from) continue;
      const mark = el("div", {class: "mark", "data-kind": m.kind, title: summary(m), style: "left:" + ((m.at_ms - from) / span * 100).toFixed(3) + "%"});
      mark.onclick = () => details(m);
      track.append(mark);
    }
    row.append(track);
    lanes.append(row);
  }
}
function draw() {
  document.getElementById("now").textContent = data.status.now;
  document.getElementById("refresh").textContent = data.refresh_ms / 1000;
  drawHolders(data.status);
  drawExpected(data.status);
  drawTimeline(data.timeline);
  for (const b of document.querySelectorAll("#zoom button")) b.className = Number(b.dataset.hours) === hours ? "on" : "";
}
for (const b of document.querySelectorAll("#zoom button")) b.onclick = () => { hours = Number(b.dataset.hours); draw(); };
async function refresh() {
  try {
    const [status, timeline] = await Promise.all(["status.json", "timeline.json"].map(async (p) => {
      const r = await fetch(p, {cache: "no-store"});
      if (!r.ok) throw new Error(p + ": HTTP " + r.status);
      return r.json();
    }));
    data.status = status; data.timeline = timeline;
    document.getElementById("state").textContent = "updated " + new Date().toLocaleTimeString();
    draw();
  } catch (e) {
    document.getElementById("state").textContent = "refresh failed: " + e.message;
  }
}
refresh();
setInterval(refresh, data.refresh_ms);
</script></body></html>
)html";

}  // namespace

std::string render_page(std::chrono::milliseconds refresh) {
  return std::string(k_head) + std::to_string(refresh.count()) + k_tail;
}

}  // namespace clk::serve
