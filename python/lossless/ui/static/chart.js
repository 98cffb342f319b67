// The session's turns as an inline SVG: each request's tokens against the budget
// and the thresholds, the view's size, compaction rounds as marks, and below, the
// share of each request repeated from the one before.

import { api } from "./api.js";
import { h, num, pct, svg } from "./dom.js";

const HEIGHT = 260;
const SHARE_HEIGHT = 90;
const PAD = { left: 64, right: 16, top: 16, bottom: 28 };

export async function chartView(app, sessionId) {
  const data = await api.series(sessionId);
  const section = h("section.chart-view");
  if (!data.requests.length) {
    section.append(h("p.dim", "No request recorded: this session's turns were written without a model call (record), or by a lossless older than its request events."));
    return section;
  }
  const width = Math.max(480, (app.main.clientWidth || 900) - 48);
  section.append(
    h("p.dim", `${num(data.requests.length)} requests${data.has_older ? " (the newest)" : ""} and ${num(data.compactions.length)} compaction rounds. Click a request to open it.`),
    tokensChart(app, sessionId, data, width),
    shareChart(app, sessionId, data, width),
    h(
      "ul.chart-legend",
      h("li", h("span.swatch.line-request"), "request tokens"),
      h("li", h("span.swatch.line-view"), "view tokens"),
      h("li", h("span.swatch.line-budget"), "request budget"),
      h("li", h("span.swatch.line-hard"), "hard threshold (view)"),
      h("li", h("span.swatch.line-soft"), "soft threshold (view)"),
      h("li", h("span.swatch.line-compaction"), "compaction round"),
    ),
  );
  return section;
}

function scaleX(count, width) {
  const inner = width - PAD.left - PAD.right;
  return (index) => PAD.left + (count <= 1 ? inner / 2 : (index * inner) / (count - 1));
}

function tokensChart(app, sessionId, data, width) {
  const requests = data.requests;
  const x = scaleX(requests.length, width);
  const top = Math.max(...requests.map((r) => Math.max(r.budget || 0, r.tokens || 0, r.view || 0))) * 1.05 || 1;
  const y = (tokens) => PAD.top + (HEIGHT - PAD.top - PAD.bottom) * (1 - tokens / top);
  const line = (pick) => requests.map((r, i) => `${x(i).toFixed(1)},${y(pick(r) || 0).toFixed(1)}`).join(" ");
  const chart = svg("svg", { id: "chart", class: "chart", viewBox: `0 0 ${width} ${HEIGHT}`, width, height: HEIGHT, role: "img", "aria-label": "request tokens per turn" });
  chart.append(...axis(top, y, width));
  for (const compaction of data.compactions) {
    const at = compactionX(requests, compaction, x);
    if (at === null) continue;
    const invalidated = compaction.invalidated_tokens === null || compaction.invalidated_tokens === undefined
      ? "" : `; ${num(compaction.invalidated_tokens)} cached tokens invalidated`;
    const label = compaction.summary_ids?.length
      ? `compaction L${compaction.level ?? "?"}: view ${num(compaction.tokens_before)} → ${num(compaction.tokens_after)} tokens${invalidated}`
      : `prune: ${num(compaction.pruned_parts)} tool outputs pruned; view ${num(compaction.tokens_before)} → ${num(compaction.tokens_after)} tokens${invalidated}`;
    chart.append(svg("g", { class: "compaction" },
      svg("title", {}, label),
      svg("line", { x1: at, x2: at, y1: PAD.top, y2: HEIGHT - PAD.bottom }),
      svg("rect", { x: at - 6, y: PAD.top - 2, width: 12, height: HEIGHT - PAD.top - PAD.bottom + 2, class: "hit" }),
      svg("text", { x: at + 3, y: PAD.top + 10 }, compaction.summary_ids?.length ? `L${compaction.level ?? ""}` : "p"),
    ));
  }
  chart.append(
    svg("polyline", { class: "line-budget", points: line((r) => r.budget) }),
    svg("polyline", { class: "line-hard", points: line((r) => r.usable) }),
    svg("polyline", { class: "line-soft", points: line((r) => r.soft) }),
    svg("polyline", { class: "line-view", points: line((r) => r.view) }),
    svg("polyline", { class: "line-request", points: line((r) => r.tokens) }),
  );
  const step = requests.length > 1 ? x(1) - x(0) : 20;
  requests.forEach((request, index) => {
    const open = () => app.go(`#/s/${sessionId}/request/${request.event_seq}`);
    chart.append(svg("g", { class: "point", "data-event": request.event_seq },
      svg("title", {}, `request after #${request.seq}: ${num(request.tokens)} of ${num(request.budget)} tokens; view ${num(request.view)}; ${pct(request.stable_prefix, request.tokens)} repeated${request.omitted ? `; ${request.omitted} left out` : ""}`),
      svg("rect", { class: "hit", x: x(index) - Math.max(step, 4) / 2, y: PAD.top, width: Math.max(step, 4), height: HEIGHT - PAD.top - PAD.bottom }),
      requests.length <= 400 ? svg("circle", { cx: x(index), cy: y(request.tokens), r: 2.5 }) : null,
    ));
    chart.lastChild.addEventListener("click", open);
  });
  return chart;
}

function shareChart(app, sessionId, data, width) {
  const requests = data.requests;
  const x = scaleX(requests.length, width);
  const inner = SHARE_HEIGHT - 8 - PAD.bottom;
  const chart = svg("svg", { id: "share-chart", class: "chart share", viewBox: `0 0 ${width} ${SHARE_HEIGHT}`, width, height: SHARE_HEIGHT, role: "img", "aria-label": "share of each request repeated from the previous one" });
  chart.append(
    svg("text", { x: 4, y: SHARE_HEIGHT - 8, class: "axis-label" }, "repeated"),
    svg("text", { x: PAD.left - 6, y: 12, class: "tick", "text-anchor": "end" }, "100%"),
    svg("text", { x: PAD.left - 6, y: 8 + inner, class: "tick", "text-anchor": "end" }, "0%"),
    svg("line", { class: "grid", x1: PAD.left, x2: width - PAD.right, y1: 8 + inner, y2: 8 + inner }),
  );
  const barWidth = Math.max(1, Math.min(12, (width - PAD.left - PAD.right) / Math.max(requests.length, 1) - 1));
  requests.forEach((request, index) => {
    const share = request.tokens ? request.stable_prefix / request.tokens : 0;
    const bar = svg("rect", {
      class: "share-bar", x: x(index) - barWidth / 2, y: 8 + inner * (1 - share),
      width: barWidth, height: Math.max(inner * share, 0.5),
    }, svg("title", {}, `request after #${request.seq}: ${pct(request.stable_prefix, request.tokens)} repeated from the previous request`));
    bar.addEventListener("click", () => app.go(`#/s/${sessionId}/request/${request.event_seq}`));
    chart.append(bar);
  });
  return chart;
}

function compactionX(requests, compaction, x) {
  const after = requests.findIndex((request) => request.event_seq > compaction.event_seq);
  if (after === 0) return x(0) - 4;
  if (after === -1) return x(requests.length - 1) + 4;
  return (x(after - 1) + x(after)) / 2;
}

function axis(top, y, width) {
  const ticks = [];
  const step = niceStep(top / 4);
  for (let value = 0; value <= top; value += step) {
    ticks.push(
      svg("line", { class: "grid", x1: PAD.left, x2: width - PAD.right, y1: y(value), y2: y(value) }),
      svg("text", { class: "tick", x: PAD.left - 6, y: y(value) + 4, "text-anchor": "end" }, num(value)),
    );
  }
  ticks.push(svg("text", { x: 4, y: 12, class: "axis-label" }, "tokens"));
  return ticks;
}

function niceStep(raw) {
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const factor of [1, 2, 2.5, 5, 10]) if (factor * power >= raw) return factor * power;
  return 10 * power;
}
