// Search results: each hit opens its message in the timeline (or its summary).

import { api } from "./api.js";
import { h, short } from "./dom.js";

export async function searchView(app, query) {
  const { hits } = await api.search({ q: query, limit: 50 });
  return h(
    "section.search-view",
    h("h2", `${hits.length} hits for “${query}”`),
    hits.length ? h("ol.hits#hits", hits.map((hit) => hitItem(hit))) : h("p.dim", "Nothing found."),
  );
}

function hitItem(hit) {
  const href = hit.owner_kind === "message" && hit.seq
    ? `#/s/${hit.session_id}/timeline/${hit.seq}`
    : `#/s/${hit.session_id}/summaries/${hit.owner_id}`;
  return h(
    "li.hit",
    h(
      "a.hit-link",
      { href },
      h("span.badge", hit.owner_kind === "message" ? `message #${hit.seq ?? "?"}` : "summary"),
      " ",
      h("code", short(hit.session_id)),
      hit.covering_summary_id ? h("span.badge.state-compacted", `compacted under ${short(hit.covering_summary_id)}`) : h("span.badge.state-view", "in the view"),
    ),
    h("div.snippet", marked(hit.snippet)),
  );
}

/** The snippet with the matched words (the index puts them in brackets) marked. */
function marked(snippet) {
  const parts = [];
  let rest = snippet;
  const pattern = /\[([^\[\]]+)\]/;
  for (let match = rest.match(pattern); match; match = rest.match(pattern)) {
    parts.push(rest.slice(0, match.index), h("mark", match[1]));
    rest = rest.slice(match.index + match[0].length);
  }
  parts.push(rest);
  return parts;
}
