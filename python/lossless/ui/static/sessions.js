// The sessions of the database as a tree by lineage: forks under the session they
// forked from, an operator's sub-sessions under the session that ran them.

import { h, num, short, when } from "./dom.js";

export function sessionTree(sessions, currentId) {
  const byId = new Map(sessions.map((session) => [session.id, session]));
  const children = new Map();
  const roots = [];
  for (const session of sessions) {
    const parent = session.fork_of?.id || session.parent;
    if (parent && byId.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(session);
    } else {
      roots.push(session);
    }
  }
  const item = (session) => {
    const below = children.get(session.id) || [];
    const how = session.fork_of ? `fork at #${session.fork_of.seq}` : session.parent ? "sub-session" : null;
    return h(
      `li.session${session.id === currentId ? ".current" : ""}`,
      { dataset: { id: session.id } },
      h(
        "a.session-link",
        { href: `#/s/${session.id}`, title: session.id },
        h("span.session-name", session.key || short(session.id)),
        h("span.session-model", session.model),
        h(
          "span.session-meta",
          `${num(session.messages)} messages · ${num(session.view_tokens)} view tokens`,
          session.summaries ? ` · ${num(session.summaries)} summaries` : "",
        ),
        h("span.session-meta", how ? `${how} · ${when(session.created_at)}` : when(session.created_at)),
      ),
      below.length ? h("ul.tree", below.map(item)) : null,
    );
  };
  return roots.map(item);
}
