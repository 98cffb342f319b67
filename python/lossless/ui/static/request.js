// A request as it was sent: its parts as one stacked bar against the budget, the
// arena's zones and entries, and its items in order.

import { api } from "./api.js";
import { h, num, pct, short, when } from "./dom.js";
import { messageCard } from "./messages.js";

export const PARTS = [
  ["tools", "tool definitions"],
  ["system", "system prompt"],
  ["arena_system", "pins & ledger"],
  ["summaries", "summaries"],
  ["history", "history"],
  ["block", "arena block"],
  ["earlier_blocks", "earlier blocks"],
];

/** The request `reading` resolves to (a read of the API under way). */
export async function requestView(app, sessionId, reading) {
  const request = await reading;
  const nav = h(
    "div.toolbar",
    h("button#request-previous", {
      type: "button", disabled: request.previous === null,
      onclick: () => app.go(`#/s/${sessionId}/request/${request.previous}`),
    }, "← previous request"),
    h("button#request-next", {
      type: "button", disabled: request.next === null,
      onclick: () => app.go(`#/s/${sessionId}/request/${request.next}`),
    }, "next request →"),
    h("a", { href: `#/s/${sessionId}/timeline/${request.seq}` }, `timeline at #${request.seq}`),
  );
  return h(
    "section.request",
    nav,
    h(
      "h2#request-title",
      `Request after message #${request.seq}`,
      h("span.meta", `event ${request.event_seq} · ${when(request.created_at)} · ${request.format}${request.profile !== "default" ? ` · ${request.profile}` : ""}`),
    ),
    h(
      "p.figures",
      h("strong", `${num(request.tokens)} tokens`),
      ` of a ${num(request.budget)}-token budget (${pct(request.tokens, request.budget)}) · `,
      `${num(request.stable_prefix)} repeated from the previous request (${pct(request.stable_prefix, request.tokens)}) · `,
      request.omitted ? h("span.warn", `${num(request.omitted)} view items left out to fit`) : "nothing left out",
      request.pruned?.length ? ` · ${request.pruned.length} tool outputs pruned` : "",
    ),
    budgetBar(request),
    zones(request),
    h("h3", "In order"),
    h("div.items", request.items.map((item) => itemView(app, sessionId, item, request))),
  );
}

/** The parts of the request as one stacked bar, the budget its full width. */
export function budgetBar(request) {
  const parts = request.parts || {};
  const width = Math.max(request.budget || 0, request.tokens || 0, 1);
  const bar = h("div.stack#budget-bar", { role: "img", "aria-label": "tokens of each part against the budget" });
  for (const [name, label] of PARTS) {
    const tokens = parts[name] || 0;
    if (!tokens) continue;
    bar.append(h(`span.seg.part-${name}`, {
      style: { width: `${(100 * tokens) / width}%` },
      title: `${label}: ${num(tokens)} tokens`,
    }));
  }
  const marks = [];
  if (request.soft && request.usable) {
    // The soft threshold is a share of the view's budget; drawn where the view
    // would reach it beside the system message.
    const at = request.soft + (request.budget - request.usable);
    marks.push(h("span.mark.soft", { style: { left: `${(100 * at) / width}%` }, title: `soft threshold: compaction starts (${num(request.soft)} view tokens)` }));
  }
  return h(
    "div.budget",
    h("div.stack-wrap", bar, marks),
    h(
      "ul.stack-legend",
      PARTS.filter(([name]) => parts[name]).map(([name, label]) =>
        h("li", h(`span.swatch.part-${name}`), `${label} ${num(parts[name])}`)),
      h("li", h("span.swatch.free"), `free ${num(Math.max(0, (request.budget || 0) - (request.tokens || 0)))}`),
    ),
  );
}

function zones(request) {
  const zoneRows = Object.entries(request.zones || {});
  if (!zoneRows.length && !(request.arena || []).length) return null;
  return h(
    "details.zones",
    { open: true },
    h("summary", `Arena: ${zoneRows.length} zones · ledger ${num(request.ledger || 0)} tokens`),
    h(
      "table",
      h("thead", h("tr", h("th", "zone"), h("th", "tokens"), h("th", "cap"), h("th", "entries (key @ version)"))),
      h(
        "tbody",
        zoneRows.map(([zone, [accepted, cap]]) =>
          h(
            "tr",
            h("td", zone),
            h("td.num", num(accepted)),
            h("td.num", num(cap)),
            h("td", (request.arena || []).filter((entry) => entry[0] === zone)
              .map(([, key, version]) => h("code.entry", version ? `${key} @${version}` : key))),
          )),
      ),
    ),
  );
}

function itemView(app, sessionId, item, request) {
  switch (item.kind) {
    case "tools":
      return h("details.item.item-tools", h("summary", "Tool definitions"), h("pre", pretty(item.text)));
    case "system":
      return h(
        "div.item.item-system",
        h("div.item-head", "system"),
        h("div.text", item.prompt || h("em.dim", "(no system prompt)")),
        item.arena && h(
          "details.arena-text",
          h("summary.item-head", `pinned facts, identity and ledger (arena) · ${num(request.parts?.arena_system)} tokens`),
          h("div.text", item.arena),
        ),
      );
    case "summary":
      return h(
        "details.item.item-summary",
        h(
          "summary",
          h("span.badge.state-compacted", `summary L${item.level ?? "?"}`),
          " ",
          h("a", { href: `#/s/${sessionId}/summaries/${item.id}` }, short(item.id)),
          item.missing ? " (erased)" : ` · ${item.summary_kind} · messages #${item.first_seq}–#${item.last_seq} (${num(item.message_count)}) · ${num(item.tokens)} tokens`,
        ),
        item.text && h("div.text", item.text),
      );
    case "marker":
      return h("div.item.item-marker", h("span.badge.state-left_out", "left out"), " ", item.text);
    case "messages":
      return h(
        "div.item.item-messages",
        item.messages.map((message) => messageCard(message, {
          sessionId,
          onWhole: async (shown, card) => card.replaceWith(messageCard(await api.message(sessionId, shown.id), { sessionId })),
        })),
      );
    case "block":
    case "earlier":
      return h(
        `div.item.item-block`,
        h("div.item-head", item.kind === "block" ? "arena <context> block (task, failures, memory, recall)" : "an earlier turn's <context> block, where it was sent"),
        h("div.text", item.text || h("em.dim", "(text not recorded)")),
      );
    default:
      return null;
  }
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text || "";
  }
}
