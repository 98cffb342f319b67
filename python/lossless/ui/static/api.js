// The viewer's JSON API, read with fetch; errors carry the server's message.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** GET `path` as JSON. */
export async function get(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    throw new ApiError(response.status, (body && body.error) || response.statusText);
  }
  return body;
}

export const api = {
  sessions: () => get("/api/sessions"),
  session: (id) => get(`/api/sessions/${enc(id)}`),
  messages: (id, query = {}) => get(`/api/sessions/${enc(id)}/messages${qs(query)}`),
  message: (id, messageId) => get(`/api/sessions/${enc(id)}/messages/${enc(messageId)}`),
  series: (id, query = {}) => get(`/api/sessions/${enc(id)}/requests${qs(query)}`),
  request: (id, eventSeq) => get(`/api/sessions/${enc(id)}/requests/${eventSeq}`),
  requestAt: (id, seq) => get(`/api/sessions/${enc(id)}/requests/at/${seq}`),
  roots: (id) => get(`/api/sessions/${enc(id)}/summaries`),
  summary: (id, summaryId) => get(`/api/sessions/${enc(id)}/summaries/${enc(summaryId)}`),
  since: (id, event) => get(`/api/sessions/${enc(id)}/since?event=${event}`),
  search: (query) => get(`/api/search${qs(query)}`),
};

function enc(value) {
  return encodeURIComponent(value);
}

function qs(query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== "") params.set(name, value);
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}
