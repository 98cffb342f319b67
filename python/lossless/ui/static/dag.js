// The summary DAG as a tree: live summaries on top, each opened to its sources,
// down to the original messages.

import { api } from "./api.js";
import { h, num, short, when } from "./dom.js";

export async function dagView(app, sessionId, openId = null) {
  const { roots } = await api.roots(sessionId);
  const tree = h("ul.tree.dag#dag");
  const section = h(
    "section.dag-view",
    h("p.dim", roots.length
      ? `${roots.length} live summaries stand in the view for what was compacted. Open one to read what it condensed, down to the original messages.`
      : "No summaries: every message is still in the view."),
    tree,
  );
  for (const root of roots) tree.append(nodeItem(app, sessionId, root));
  if (openId) await reveal(app, sessionId, tree, openId);
  return section;
}

function nodeItem(app, sessionId, node) {
  const children = h("ul.tree");
  const body = h("div.node-body");
  let loaded = false;
  const item = h(
    "li.node",
    { dataset: { id: node.id, first: node.first_seq, last: node.last_seq } },
    h(
      "button.node-toggle",
      { type: "button", "aria-expanded": "false", onclick: () => toggle() },
      h("span.twisty", "▸"),
      h(`span.badge.kind-${node.kind}`, `${node.kind} L${node.level}`),
      " ",
      h("code", short(node.id)),
      h("span.meta", ` messages #${node.first_seq}–#${node.last_seq} · ${num(node.message_count)} messages · ${num(node.tokens)} tokens${node.live ? " · live" : ""}`),
    ),
    body,
    children,
  );
  async function toggle(open = null) {
    const expanded = item.classList.contains("open");
    if (open === false || (open === null && expanded)) {
      item.classList.remove("open");
      item.querySelector(".node-toggle").setAttribute("aria-expanded", "false");
      return;
    }
    if (!loaded) {
      const full = await api.summary(sessionId, node.id);
      body.append(h("div.text.summary-text", full.text), h("div.meta", `written ${when(full.created_at)}`));
      for (const child of full.children || []) children.append(nodeItem(app, sessionId, child));
      for (const message of full.messages || []) {
        children.append(
          h(
            "li.source-message",
            h("a", { href: `#/s/${sessionId}/timeline/${message.seq}` },
              h("span.seq", `#${message.seq}`), " ", h(`span.role.role-${message.role}`, message.role)),
            " ",
            h("span.snippet", message.snippet),
          ),
        );
      }
      if (full.children_cut) children.append(h("li.dim", `… ${full.children_cut} more`));
      loaded = true;
    }
    item.classList.add("open");
    item.querySelector(".node-toggle").setAttribute("aria-expanded", "true");
  }
  item.open = toggle;
  return item;
}

/** Opens the path to `summaryId`: down from the live summary whose span holds its
 *  span, through the nodes that hold it (spans nest). */
async function reveal(app, sessionId, tree, summaryId) {
  const target = await api.summary(sessionId, summaryId);
  const holds = (item) =>
    Number(item.dataset.first) <= target.first_seq && target.last_seq <= Number(item.dataset.last);
  let level = [...tree.children];
  for (let depth = 0; depth < 64; depth++) {
    const item = level.find((candidate) => candidate.dataset.id === summaryId) || level.find(holds);
    if (!item) return;
    await item.open(true);
    if (item.dataset.id === summaryId) {
      item.classList.add("highlight");
      item.scrollIntoView({ block: "center" });
      return;
    }
    level = [...item.querySelectorAll(":scope > ul > li.node")];
  }
}
