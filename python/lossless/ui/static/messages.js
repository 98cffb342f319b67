// One stored message and its parts, as the timeline and a request show them.

import { h, num, short, when } from "./dom.js";

export const STATES = {
  request: ["in request", "In the newest request"],
  left_out: ["left out", "In the view, left out of the newest request to fit its budget"],
  new: ["new", "Written after the newest request"],
  view: ["in view", "In the view; no request recorded yet"],
  compacted: ["compacted", "Out of the view: a summary stands for it"],
};

/**
 * A message as a card. `options.onRequest(seq)` opens the request a reply answered;
 * `options.onSummary(id)` opens the summary that covers it.
 */
export function messageCard(message, options = {}) {
  const state = message.state ? STATES[message.state] : null;
  const head = h(
    "div.msg-head",
    h("span.seq", `#${message.seq}`),
    h(`span.role.role-${message.role}`, message.role),
    state && h(`span.badge.state-${message.state}`, { title: state[1] }, state[0]),
    message.summary_id &&
      h(
        "a.summary-link",
        {
          href: options.sessionId ? `#/s/${options.sessionId}/summaries/${message.summary_id}` : null,
          title: "The live summary that covers this message",
        },
        `under ${short(message.summary_id)}`,
      ),
    message.status !== "complete" && h("span.badge.state-warn", message.status),
    h("span.meta", `${num(message.tokens)} tokens`),
    message.input_tokens !== null && message.input_tokens !== undefined &&
      h("span.meta", `in ${num(message.input_tokens)} · out ${num(message.output_tokens)}`),
    h("span.meta.time", when(message.created_at)),
    message.role === "assistant" && options.onRequest &&
      h(
        "button.link.open-request",
        { type: "button", title: "The request this reply answered", onclick: () => options.onRequest(message.seq) },
        "request sent ↗",
      ),
  );
  let card = null;
  const whole = options.onWhole ? () => options.onWhole(message, card) : null;
  card = h(
    `article.msg.msg-${message.role}${message.state ? `.is-${message.state}` : ""}`,
    { id: `m${message.seq}`, dataset: { seq: message.seq, id: message.id } },
    head,
    h("div.parts", message.parts.map((part) => partView(part, { ...options, onWhole: whole }))),
  );
  return card;
}

function partView(part, options) {
  switch (part.kind) {
    case "text":
      return h("div.part.text", part.text || h("em.dim", "(empty)"), cutNote(part.text_cut, options));
    case "reasoning":
      return h(
        "details.part.reasoning",
        h("summary", `reasoning${part.provider ? ` · ${part.provider}` : ""}${part.signed ? " · signed" : ""}`),
        h("div.text", part.text || h("em.dim", "(no readable text)")),
      );
    case "provider_compaction":
      return h(
        "details.part.reasoning",
        h("summary", `${part.provider}'s compaction`),
        h("div.text", part.text || ""),
      );
    case "tool":
      return toolView(part, options);
    case "media":
      return mediaView(part);
    case "file_ref":
      return h(
        "div.part.file",
        h("span.badge", part.file_type || "file"),
        h("code", part.file_id),
        " ",
        part.path,
        h("span.meta", `${num(part.token_count)} tokens`),
        part.summary && h("div.dim", part.summary),
      );
    default:
      return h("div.part.dim", `[${part.kind}]`);
  }
}

function toolView(part, options) {
  const status = part.error ? "error" : part.status;
  return h(
    `div.part.tool${part.pruned ? ".pruned" : ""}`,
    h(
      "div.tool-head",
      h("span.tool-name", part.name),
      h(`span.badge.status-${status}`, status),
      part.pruned && h("span.badge.state-pruned", { title: "The output went out as a one-line marker" }, "output pruned"),
      h("code.dim", part.call_id),
    ),
    h("pre.tool-input", part.input || ""),
    part.input_cut ? cutNote(part.input_cut, options) : null,
    part.output !== null && part.output !== undefined &&
      h(
        "details.tool-output",
        { open: !part.pruned && (part.output || "").length < 600 },
        h("summary", part.pruned ? "output (stored whole, pruned from the request)" : "output"),
        h("pre", part.output),
        cutNote(part.output_cut, options),
      ),
    part.error && h("pre.tool-error", part.error),
  );
}

function mediaView(part) {
  const label = [part.media_kind, part.width && `${part.width}×${part.height}`, part.caption]
    .filter(Boolean)
    .join(" · ");
  if (part.src && part.media_kind === "image") {
    return h(
      "figure.part.media",
      h("a", { href: part.src, target: "_blank", rel: "noopener" },
        h("img.thumb", { src: part.src, alt: part.caption || part.media_id, loading: "lazy" })),
      h("figcaption", label, " ", h("code.dim", part.media_id)),
    );
  }
  return h(
    "div.part.media",
    h("span.badge", part.media_kind),
    part.src ? h("a", { href: part.src }, part.filename || part.media_id) : h("code", part.media_id),
    " ",
    label,
  );
}

function cutNote(chars, options) {
  if (!chars) return null;
  return h("div.cut", `… ${chars.toLocaleString("en")} more characters`,
    options.onWhole ? h("button.link", { type: "button", onclick: options.onWhole }, " show all") : null);
}
