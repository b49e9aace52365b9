// The changes and replication panes of the data browser: a database's changes followed live, and
// replications as _replicator documents with their /_scheduler/docs states.
import {api, dbPath} from "./api.js";
import {crumbs, el, link, quiet, route, routeNumber, row, say, sayError, session} from "./page.js";

// ---- changes, live ----

// Longpoll after longpoll from `since=now` while this view is shown (`routing` moves on when not).
export async function showChanges(db) {
  const mine = routeNumber();
  const selector = el("input", {type: "text", id: "changes-selector", placeholder: 'selector (JSON), e.g. {"type": "a"}',
                                "aria-label": "a selector the changes must match"});
  const table = el("table", {id: "changes"}, row(["Seq", "Document", "Revision", ""].map((t) => el("th", {text: t}))));
  const state = el("p", {class: "muted", id: "changes-state", text: "starting…"});
  let generation = 0;
  const follow = async () => {
    const me = ++generation;
    let filter;
    if (selector.value.trim()) {
      try { filter = {selector: JSON.parse(selector.value)}; } catch (e) { return say("The selector is not JSON: " + e.message + "."); }
    }
    quiet();
    while (table.rows.length > 1) table.deleteRow(1);
    let since = "now";
    state.textContent = "following since now" + (filter ? ", by the selector" : "");
    while (me === generation && mine === routeNumber()) {
      try {
        const path = dbPath(db) + "/_changes?feed=longpoll&timeout=10000&since=" + encodeURIComponent(since) +
                     (filter ? "&filter=_selector" : "");
        const r = filter ? await api("POST", path, filter) : await api("GET", path);
        if (me !== generation || mine !== routeNumber()) return;
        state.textContent = "following since " + (since === "now" ? "now" : "seq " + since.split("-")[0]) +
                            (filter ? ", by the selector" : "") + "; " + (table.rows.length - 1 + r.results.length) + " changes";
        for (const c of r.results)
          table.insertBefore(row([c.seq.split("-")[0], link(c.id, "#/db/" + encodeURIComponent(db) + "/doc/" + encodeURIComponent(c.id)),
                                  el("code", {text: c.changes.map((x) => x.rev).join(", ")}), c.deleted ? "deleted" : ""], {id: c.id}),
                             table.rows[1] || null);
        document.body.dataset.changesPolls = String(Number(document.body.dataset.changesPolls || 0) + 1);
        since = r.last_seq;
      } catch (e) {
        if (me === generation && mine === routeNumber()) { sayError(e); state.textContent = "stopped"; }
        return;
      }
    }
  };
  const form = el("form", {class: "toolbar", id: "changes-filter", onsubmit: (ev) => { ev.preventDefault(); follow(); }},
                  selector, el("button", {type: "submit", text: "Follow"}));
  setTimeout(follow, 0);
  return [el("section", {class: "wide"}, crumbs(link(db, "#/db/" + encodeURIComponent(db)), el("span", {text: "changes"})),
             el("p", {class: "muted", text: "Each change as it is written, newest first (a longpoll _changes feed from now)."}),
             form, state, table)];
}

// ---- replication ----

let replicationPassword = "";  // typed once a page load, never stored
export function forgetPassword() { replicationPassword = ""; }

export async function showReplication() {
  const docs = await api("GET", "/_scheduler/docs");
  const field = (id, label) => el("input", {type: "text", id, placeholder: label, "aria-label": label});
  const source = field("rep-source", "source: a database here or a URL"), target = field("rep-target", "target: a database here or a URL");
  const since = field("rep-since", "since_seq: a seq or a time, 2026-11-30T09:00:00Z");
  const selector = field("rep-selector", "selector (JSON)");
  const box = (id, label) => el("label", {}, el("input", {type: "checkbox", id}), " " + label);
  const continuous = box("rep-continuous", "continuous"), create = box("rep-create", "create the target");
  const password = el("input", {type: "password", id: "rep-password", autocomplete: "current-password",
                                placeholder: "your password, for this node's databases", "aria-label": "your password",
                                value: replicationPassword});
  password.addEventListener("input", () => { replicationPassword = password.value; });  // kept in this page only
  // A database of this node is named by its URL with the signed-in user's name and password (as
  // Fauxton asks for them): the replicator runs apart from this page's session.
  const endpoint = (text) => (/^https?:\/\//.test(text) ? text
    : {url: location.origin + dbPath(text), auth: {basic: {username: session.name, password: password.value}}});
  const form = el("form", {class: "toolbar", id: "new-replication", onsubmit: async (ev) => {
    ev.preventDefault();
    const local = [source, target].some((f) => !/^https?:\/\//.test(f.value.trim()));
    if (local && !password.value) return say("Your password is needed to replicate this node's databases. Nothing was sent.");
    const doc = {source: endpoint(source.value.trim()), target: endpoint(target.value.trim())};
    if (continuous.firstChild.checked) doc.continuous = true;
    if (create.firstChild.checked) doc.create_target = true;
    if (since.value.trim()) doc.since_seq = since.value.trim();
    if (selector.value.trim()) {
      try { doc.selector = JSON.parse(selector.value); } catch (e) { return say("The selector is not JSON: " + e.message + ". Nothing was sent."); }
    }
    try {
      const r = await api("POST", "/_replicator", doc);
      say("Replication " + r.id + " saved in _replicator.", true);
      route(true);
    } catch (e) { sayError(e); }
  }}, source, target, since, selector, password, continuous, create, el("button", {type: "submit", text: "Replicate"}));
  const table = el("table", {id: "replications"},
                   row(["Document", "Source → target", "State", "Error", ""].map((t) => el("th", {text: t}))));
  const strip = (url) => String((url && url.url) || url || "").replace(/\/\/[^@/]*@/, "//");  // credentials are not shown
  for (const d of docs.docs) {
    const remove = el("button", {type: "button", class: "danger", text: "Delete", onclick: async () => {
      try {
        const current = await api("GET", "/_replicator/" + encodeURIComponent(d.doc_id));
        await api("DELETE", "/_replicator/" + encodeURIComponent(d.doc_id) + "?rev=" + encodeURIComponent(current._rev));
        say("Deleted replication " + d.doc_id + ".", true);
        route(true);
      } catch (e) { sayError(e); }
    }});
    const error = d.info && d.info.error ? String(d.info.error) : d.error_count ? d.error_count + " errors" : "";
    table.append(row([d.doc_id, strip(d.source) + " → " + strip(d.target), d.state || "", el("td", {class: "error", text: error}),
                      el("td", {}, remove)], {doc: d.doc_id, state: d.state || ""}));
  }
  if (!docs.docs.length) table.append(row([el("span", {class: "muted", text: "no replications in _replicator"})]));
  return [el("section", {class: "wide"}, el("h2", {class: "crumbs", text: "Replication"}), form,
             el("div", {class: "toolbar"}, el("button", {type: "button", id: "rep-refresh", text: "Refresh", onclick: () => route()})),
             table)];
}

