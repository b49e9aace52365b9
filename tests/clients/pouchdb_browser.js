// PouchDB in a real browser page on another origin, syncing with settee through CORS: Debian's
// chromium, headless, driven by playwright-core; pouchdb-browser from npm, bundled by esbuild.
// Serves one page on two origins (two loopback ports): on the allowed one the page signs in with a
// cookie (POST /_session, credentials included), syncs live both ways with the node (a document
// written on each side, a conflict made on both sides while apart, an attachment each way), and
// reports what it saw; on the refused one it tries the same sign-in and reports the browser's CORS
// refusal. Prints JSON for the Python test (tests/integration/test_browser.py).
//   node pouchdb_browser.js <node url> <db> <user> <password> <admin> <admin password> <allowed port> <refused port>
"use strict";
const http = require("http");
const path = require("path");
const esbuild = require("esbuild");
const { chromium } = require("playwright-core");

const [base, db, user, password, admin, adminPassword, allowedPort, refusedPort] = process.argv.slice(2);
const adminAuth = "Basic " + Buffer.from(`${admin}:${adminPassword}`).toString("base64");

// The node, as an administrator writing from elsewhere (Node's own fetch).
async function server(method, p, body) {
  const r = await fetch(base + p, {
    method,
    headers: { Authorization: adminAuth, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

async function waitFor(what, f, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((res) => setTimeout(res, 50));
  }
}

function servePage(port, bundle) {
  const page = "<!doctype html><meta charset=utf-8><title>settee sync</title><script src=/pouchdb.js></script>";
  const s = http.createServer((req, res) => {
    if (req.url === "/pouchdb.js") {
      res.writeHead(200, { "Content-Type": "text/javascript" });
      return res.end(bundle);
    }
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end(page);
  });
  return new Promise((res) => s.listen(Number(port), "127.0.0.1", () => res(s)));
}

(async () => {
  const bundle = esbuild.buildSync({
    entryPoints: [path.join(process.env.NODE_PATH.split(":")[0], "pouchdb-browser/lib/index.es.js")],
    bundle: true, format: "iife", globalName: "PouchDBModule", write: false, logLevel: "error",
  }).outputFiles[0].text;
  const servers = [await servePage(allowedPort, bundle), await servePage(refusedPort, bundle)];
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-proxy-server", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  const out = {};
  try {
    // Before the page syncs: the same document edited on both sides, so they conflict when they meet.
    const made = await server("PUT", `/${db}/conflicted`, { side: "server" });
    if (made.status !== 201) throw new Error("server write: " + JSON.stringify(made));

    const page = await browser.newPage();
    const console_ = [];
    page.on("console", (m) => console_.push(m.type() + ": " + m.text()));
    page.on("pageerror", (e) => console_.push("pageerror: " + String(e)));
    await page.goto(`http://127.0.0.1:${allowedPort}/`);
    out.signedIn = await page.evaluate(async ({ base, db, user, password }) => {
      const PouchDB = window.PouchDBModule.default;
      const r = await fetch(`${base}/_session`, {
        method: "POST", credentials: "include",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: user, password }),
      });
      const session = await r.json();
      // Every request of the remote database carries the session cookie and nothing else.
      window.remote = new PouchDB(`${base}/${db}`, {
        fetch: (url, opts) => PouchDB.fetch(url, Object.assign({}, opts, { credentials: "include" })),
      });
      window.local = new PouchDB("local-notes");
      await window.local.put({ _id: "conflicted", side: "browser" });
      await window.local.put({ _id: "from-browser", text: "written in the page" });
      const blob = new Blob(["hello from the browser"], { type: "text/plain" });
      await window.local.putAttachment("browser-file", "hello.txt", blob, "text/plain");
      window.events = [];
      window.sync = window.local.sync(window.remote, { live: true, retry: true })
        .on("change", (c) => window.events.push(c.direction))
        .on("error", (e) => window.events.push("error: " + e));
      const who = await (await fetch(`${base}/_session`, { credentials: "include" })).json();
      return { status: r.status, ok: session.ok, name: who.userCtx.name };
    }, { base, db, user, password });

    // The page's writes reach the node.
    await waitFor("the page's documents on the node", async () => {
      const a = await server("GET", `/${db}/from-browser`);
      const b = await server("GET", `/${db}/browser-file`);
      return a.status === 200 && b.status === 200 && b.json._attachments;
    });
    const att = await fetch(`${base}/${db}/browser-file/hello.txt`, { headers: { Authorization: adminAuth } });
    out.attachmentOnNode = await att.text();
    // The node's writes reach the page, live: a document and an attachment.
    await server("PUT", `/${db}/from-node`, { text: "written on the node" });
    const withFile = await server("PUT", `/${db}/node-file`, {
      _attachments: { "n.txt": { content_type: "text/plain", data: Buffer.from("hello from the node").toString("base64") } },
    });
    if (withFile.status !== 201) throw new Error("server attachment: " + JSON.stringify(withFile));
    out.inPage = await page.evaluate(async () => {
      const end = Date.now() + 20000;
      for (;;) {
        try {
          const doc = await window.local.get("from-node");
          const blob = await window.local.getAttachment("node-file", "n.txt");
          const mine = await window.local.get("conflicted", { conflicts: true });
          if (mine._conflicts && mine._conflicts.length === 1) {
            return { text: doc.text, attachment: await blob.text(), conflicts: mine._conflicts.length,
                     winner: mine._rev, events: window.events };
          }
        } catch (e) { /* not there yet */ }
        if (Date.now() > end) return { timedOut: true, events: window.events };
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    out.onNode = await waitFor("the conflict on the node", async () => {
      const c = await server("GET", `/${db}/conflicted?conflicts=true`);
      return c.json._conflicts && c.json._conflicts.length === 1 ? { winner: c.json._rev, conflicts: 1 } : null;
    });
    await page.evaluate(() => window.sync.cancel());
    // A replication's first look for its checkpoint is a 404 (as against CouchDB), which chromium logs.
    out.consoleErrors = console_.filter((m) => (m.startsWith("error") || m.startsWith("pageerror")) &&
                                              !m.includes("status of 404"));

    // The refused origin: the browser itself refuses the answer.
    const other = await browser.newPage();
    const refusedConsole = [];
    other.on("console", (m) => refusedConsole.push(m.text()));
    await other.goto(`http://127.0.0.1:${refusedPort}/`);
    out.refused = await other.evaluate(async ({ base, user, password }) => {
      try {
        await fetch(`${base}/_session`, {
          method: "POST", credentials: "include",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ name: user, password }),
        });
        return { fetched: true };
      } catch (e) {
        return { fetched: false, error: String(e) };
      }
    }, { base, user, password });
    out.refused.console = refusedConsole;
  } finally {
    await browser.close();
    servers.forEach((s) => s.close());
  }
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => {
  process.stderr.write(String(e.stack || e) + "\n");
  process.exit(1);
});
