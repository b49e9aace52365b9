// The users pane of the data browser: _users listed, created, given roles and passwords, deleted.
import {api, query} from "./api.js";
import {el, names, route, row, say, sayError} from "./page.js";

// ---- users ----

const USER = "org.couchdb.user:";

export async function showUsers() {
  const page = await api("GET", "/_users/_all_docs" + query({startkey: USER, endkey: USER + "\ufff0", include_docs: "true", limit: 1000}));
  const table = el("table", {id: "users"}, row(["User", "Roles", "", ""].map((t) => el("th", {text: t}))));
  for (const r of page.rows) {
    const doc = r.doc, name = doc.name || r.id.slice(USER.length);
    const roles = el("input", {type: "text", class: "user-roles", value: (doc.roles || []).join(", "), "aria-label": "roles of " + name});
    const password = el("input", {type: "password", class: "user-password", placeholder: "new password", "aria-label": "new password of " + name,
                                  autocomplete: "new-password"});
    const save = el("button", {type: "button", class: "user-save", text: "Save", onclick: async () => {
      const next = Object.assign({}, doc, {roles: names(roles.value)});
      if (password.value) next.password = password.value;
      try {
        await api("PUT", "/_users/" + encodeURIComponent(r.id), next);
        say("Saved " + name + (password.value ? ", with a new password" : "") + ".", true);
        route(true);
      } catch (e) { sayError(e); }
    }});
    const remove = el("button", {type: "button", class: "danger user-delete", text: "Delete", onclick: async () => {
      try {
        await api("DELETE", "/_users/" + encodeURIComponent(r.id) + "?rev=" + encodeURIComponent(doc._rev));
        say("Deleted " + name + ".", true);
        route(true);
      } catch (e) { sayError(e); }
    }});
    table.append(row([name, roles, el("td", {}, password, " ", save), el("td", {}, remove)], {user: name}));
  }
  if (!page.rows.length) table.append(row([el("span", {class: "muted", text: "no users yet"})]));
  const name = el("input", {type: "text", id: "user-name", placeholder: "name", "aria-label": "new user's name", autocomplete: "off"});
  const password = el("input", {type: "password", id: "user-password", placeholder: "password", "aria-label": "new user's password",
                                autocomplete: "new-password"});
  const roles = el("input", {type: "text", id: "user-roles", placeholder: "roles, comma separated", "aria-label": "new user's roles"});
  const form = el("form", {class: "toolbar", id: "new-user", onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      await api("PUT", "/_users/" + encodeURIComponent(USER + name.value),
                {_id: USER + name.value, name: name.value, password: password.value, roles: names(roles.value), type: "user"});
      say("Created user " + name.value + ".", true);
      route(true);
    } catch (e) { sayError(e); }
  }}, el("strong", {text: "New user"}), name, password, roles, el("button", {type: "submit", text: "Create"}));
  return [el("section", {class: "wide"}, el("h2", {class: "crumbs", text: "Users"}), form, table)];
}

