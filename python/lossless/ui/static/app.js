// The viewer page: a router over the location's hash, the session list, a session's
// tabs (timeline, request, summaries, chart), search, and live updates.

import { api } from "./api.js";
import { chartView } from "./chart.js";
import { dagView } from "./dag.js";
import { fill, h, num, pct, short, when } from "./dom.js";
import { requestView } from "./request.js";
import { searchView } from "./search.js";
import { sessionTree } from "./sessions.js";
import { Timeline } from "./timeline.js";

// How often the page asks what changed: a second and a half keeps a running agent's
// turns appearing as they are written, at one small read per poll.
const POLL_MS = 1500;
const SESSIONS_EVERY = 4;

const TABS = [
  ["timeline", "Timeline"],
  ["request", "Request"],
  ["summaries", "Summaries"],
  ["chart", "Chart"],
];

class App {
  constructor() {
    this.main = document.getElementById("main");
    this.sidebar = document.getElementById("sessions");
    this.live = document.getElementById("live");
    this.sessions = [];
    this.current = null; // {id, detail, tab, timeline, lastEvent, latest}
    this.polls = 0;
    this.rendering = 0;
    document.getElementById("search-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const query = document.getElementById("search").value.trim();
      if (query) this.go(`#/search/${encodeURIComponent(query)}`);
    });
    window.addEventListener("hashchange", () => this.route());
  }

  go(hash) {
    if (location.hash === hash) this.route();
    else location.hash = hash;
  }

  async start() {
    // The list and the page the address names are read at once.
    await Promise.all([this.loadSessions(), this.route()]);
    setInterval(() => this.poll(), POLL_MS);
  }

  async loadSessions() {
    const { db, sessions } = await api.sessions();
    document.getElementById("db").textContent = db;
    this.sessions = sessions;
    fill(this.sidebar, sessionTree(sessions, this.current?.id));
    if (!sessions.length) this.sidebar.append(h("li.dim", "No sessions yet."));
  }

  /** Draws what the hash names. */
  async route() {
    const raw = location.hash.slice(1) || "/";
    const ticket = ++this.rendering;
    try {
      if (raw.startsWith("/search/")) {
        const query = decodeURIComponent(raw.slice("/search/".length));
        document.getElementById("search").value = query;
        this.current = null;
        this.highlightSession(null);
        const view = await searchView(this, query);
        if (ticket === this.rendering) fill(this.main, view);
        return;
      }
      const parts = raw.split("/").filter(Boolean).map(decodeURIComponent);
      if (parts[0] !== "s" || !parts[1]) {
        this.current = null;
        this.highlightSession(null);
        return;
      }
      await this.showSession(parts[1], parts[2] || "timeline", parts.slice(3), ticket);
    } catch (error) {
      if (ticket === this.rendering) fill(this.main, h("div.error#error", { role: "alert" }, error.message));
    }
  }

  highlightSession(id) {
    for (const item of this.sidebar.querySelectorAll("li.session")) {
      item.classList.toggle("current", item.dataset.id === id);
    }
  }

  async showSession(id, tab, rest, ticket) {
    // The tab's data is asked for with the session's, not after it.
    const early = this.prefetch(id, tab, rest);
    const detail = await api.session(id);
    if (ticket !== this.rendering) return;
    const previous = this.current?.id === id ? this.current : null;
    this.current = {
      id, tab, rest, detail,
      lastEvent: previous?.lastEvent ?? detail.newest_event,
      timeline: null,
    };
    this.highlightSession(id);
    const body = h("div.tab-body#tab-body", h("p.dim.loading", "Loading…"));
    fill(this.main, this.sessionHeader(detail, tab), body);
    const view = await this.tabView(id, tab, rest, early);
    if (ticket !== this.rendering) return;
    fill(body, view);
    // When each tab first drew (what the benchmark reads): `timeline-drawn`, ...
    performance.mark(`${tab}-drawn`);
    if (tab === "timeline" && this.current.timeline) {
      const seq = Number(rest[0]) || null;
      if (seq) this.current.timeline.highlight(seq);
      else this.current.timeline.list.lastElementChild?.scrollIntoView({ block: "end" });
    }
  }

  /** The first read of a tab, started before the session's own (null: none). */
  prefetch(id, tab, rest) {
    const seq = Number(rest[0]) || null;
    let early = null;
    if (tab === "timeline") early = api.messages(id, seq ? { around: seq, limit: 50 } : { limit: 50 });
    else if (tab === "request" && rest[0] === "at") early = api.requestAt(id, Number(rest[1]));
    else if (tab === "request" && rest[0]) early = api.request(id, Number(rest[0]));
    // Its error, if any, is the tab's to show when it awaits it.
    early?.catch(() => null);
    return early;
  }

  async tabView(id, tab, rest, early = null) {
    switch (tab) {
      case "timeline": {
        const timeline = new Timeline(this, id);
        this.current.timeline = timeline;
        timeline.render(await early);
        return timeline.node;
      }
      case "request":
        if (rest[0]) return requestView(this, id, early);
        if (!this.current.detail.request) return h("p.dim#no-request", "No request recorded for this session yet.");
        return requestView(this, id, api.request(id, this.current.detail.request.event_seq));
      case "summaries":
        return dagView(this, id, rest[0] || null);
      case "chart":
        return chartView(this, id);
      default:
        return h("p.error", `No tab ${tab}.`);
    }
  }

  sessionHeader(detail, tab) {
    const request = detail.request;
    const lineage = [
      ...detail.fork_of.map((fork) => h("a", { href: `#/s/${fork.id}/timeline/${fork.seq}` }, `fork of ${short(fork.id)} at #${fork.seq}`)),
      ...detail.forks.map((fork) => h("a", { href: `#/s/${fork.id}` }, `forked as ${short(fork.id)} at #${fork.seq}`)),
      ...detail.children.map((child) => h("a", { href: `#/s/${child.id}` }, `sub-session ${short(child.id)}`)),
    ];
    return h(
      "header.session-header",
      h(
        "h1#session-title",
        detail.key || short(detail.id),
        h("span.meta", ` ${detail.model} · created ${when(detail.created_at)}`),
      ),
      h(
        "p.figures",
        `${num(detail.newest_seq)} messages · view: ${num(detail.view.messages)} messages and ${num(detail.view.summaries)} summaries, ${num(detail.view.tokens)} tokens`,
        request ? ` · newest request ${num(request.tokens)} of ${num(request.budget)} tokens (${pct(request.tokens, request.budget)})` : "",
        h("code.dim", ` ${detail.id}`),
      ),
      lineage.length ? h("p.lineage", lineage.flatMap((link, i) => (i ? [" · ", link] : [link]))) : null,
      h(
        "nav.tabs",
        TABS.map(([name, label]) =>
          h(`a.tab${name === tab ? ".active" : ""}`, { href: `#/s/${detail.id}/${name}`, dataset: { tab: name } }, label)),
      ),
    );
  }

  /** Asks what the current session wrote since the last look; reads again what it changed. */
  async poll() {
    this.polls += 1;
    try {
      if (this.polls % SESSIONS_EVERY === 0) await this.refreshSessions();
      const current = this.current;
      if (!current) return this.alive(true);
      const news = await api.since(current.id, current.lastEvent);
      this.alive(true);
      if (current !== this.current || !news.events.length) return;
      current.lastEvent = news.last_event;
      const names = new Set(news.events.map((event) => event.name));
      current.detail = await api.session(current.id);
      const header = this.main.querySelector(".session-header");
      if (header) header.replaceWith(this.sessionHeader(current.detail, current.tab));
      if (current.tab === "timeline" && current.timeline) {
        await current.timeline.refresh();
      } else if (current.tab === "chart" && (names.has("request_built") || names.has("compaction_completed"))) {
        const body = document.getElementById("tab-body");
        if (body) fill(body, await chartView(this, current.id));
      }
    } catch {
      this.alive(false);
    }
  }

  async refreshSessions() {
    const scroll = this.sidebar.parentElement.scrollTop;
    await this.loadSessions();
    this.highlightSession(this.current?.id);
    this.sidebar.parentElement.scrollTop = scroll;
  }

  alive(ok) {
    this.live.classList.toggle("down", !ok);
    this.live.title = ok ? "Reads what sessions write, as they write it" : "The server does not answer";
  }
}

window.lossless = new App();
window.lossless.start().catch((error) => {
  fill(document.getElementById("main"), h("div.error#error", { role: "alert" }, error.message));
});
