// A session's timeline: pages of messages from the newest, older pages on demand,
// a jump to any seq, and new messages as they are written.

import { api } from "./api.js";
import { fill, h, num } from "./dom.js";
import { STATES, messageCard } from "./messages.js";

const PAGE = 50;

export class Timeline {
  constructor(app, sessionId) {
    this.app = app;
    this.sessionId = sessionId;
    this.first = null; // the oldest seq shown
    this.last = null; // the newest seq shown
    this.newest = 0; // the session's newest seq
    this.list = h("div.messages");
    this.olderButton = h("button#load-older", { type: "button", onclick: () => this.older() }, "Load older");
    this.jump = h("input#jump", { type: "number", min: 1, placeholder: "seq", "aria-label": "Jump to seq" });
    this.status = h("span.dim");
    this.node = h(
      "section.timeline",
      h(
        "div.toolbar",
        h("form", { onsubmit: (event) => { event.preventDefault(); this.goto(Number(this.jump.value)); } },
          "Jump to ", this.jump, h("button", { type: "submit" }, "Go")),
        legend(),
        this.status,
      ),
      this.olderButton,
      this.list,
    );
  }

  options() {
    return {
      sessionId: this.sessionId,
      onRequest: (seq) => this.app.go(`#/s/${this.sessionId}/request/at/${seq}`),
      onWhole: async (message, card) => {
        const whole = await api.message(this.sessionId, message.id);
        card.replaceWith(messageCard(whole, this.options()));
      },
    };
  }

  /** The newest page, or the page around `seq` (highlighted). */
  async load(seq = null) {
    const page = seq ? await api.messages(this.sessionId, { around: seq, limit: PAGE })
      : await api.messages(this.sessionId, { limit: PAGE });
    this.render(page);
    if (seq) this.highlight(seq);
    else this.list.lastElementChild?.scrollIntoView({ block: "end" });
  }

  render(page) {
    this.newest = page.newest_seq;
    this.first = page.first_seq;
    this.last = page.last_seq;
    fill(this.list, page.messages.map((message) => messageCard(message, this.options())));
    if (!page.messages.length) this.list.append(h("p.dim", "No messages yet."));
    this.update(page);
  }

  update(page) {
    this.olderButton.hidden = !this.first || this.first <= 1;
    const request = page.request;
    this.status.textContent = request
      ? `seq ${num(this.first)}–${num(this.last)} of ${num(page.newest_seq)} · newest request: turn after #${request.seq}, ${num(request.tokens)} of ${num(request.budget)} tokens`
      : `seq ${num(this.first)}–${num(this.last)} of ${num(page.newest_seq)} · no request recorded`;
  }

  async older() {
    if (!this.first || this.first <= 1) return;
    const anchor = this.list.firstElementChild;
    const page = await api.messages(this.sessionId, { before: this.first, limit: PAGE });
    this.first = page.first_seq;
    this.list.prepend(...page.messages.map((message) => messageCard(message, this.options())));
    anchor?.scrollIntoView({ block: "start" });
    this.update({ ...page, first_seq: this.first, last_seq: this.last });
  }

  async goto(seq) {
    if (!seq || seq < 1) return;
    this.app.go(`#/s/${this.sessionId}/timeline/${seq}`);
  }

  highlight(seq) {
    const card = this.list.querySelector(`[data-seq="${seq}"]`);
    if (!card) return;
    card.classList.add("highlight");
    card.scrollIntoView({ block: "center" });
  }

  /** Something was written: read the shown window again when it reaches the newest
   *  message (marks change with each request and compaction), else only the count. */
  async refresh() {
    const atEnd = this.last === null || this.last >= this.newest;
    if (!atEnd) return;
    const stuck = this.app.main.scrollHeight - this.app.main.scrollTop - this.app.main.clientHeight < 80;
    const count = Math.min(500, Math.max(PAGE, (this.last || 0) - (this.first || 1) + 1 + 20));
    const page = await api.messages(this.sessionId, { limit: count });
    if (this.first && page.first_seq > this.first) {
      // Keep what was loaded above: read it with the new marks.
      const older = await api.messages(this.sessionId, { before: page.first_seq, limit: page.first_seq - this.first });
      page.messages = [...older.messages, ...page.messages];
      page.first_seq = older.first_seq;
    }
    this.render(page);
    if (stuck) this.list.lastElementChild?.scrollIntoView({ block: "end" });
  }
}

function legend() {
  return h(
    "span.legend",
    Object.entries(STATES).map(([state, [label, title]]) => h(`span.badge.state-${state}`, { title }, label)),
    h("span.badge.state-pruned", { title: "A tool output sent as a one-line marker" }, "pruned"),
  );
}
