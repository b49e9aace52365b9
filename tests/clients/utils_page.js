// The data browser (/_utils/) in a real browser: Debian's chromium, headless, driven by
// playwright-core as a user drives it (click, type, save). Prints what each step showed as one JSON
// line for the Python test (tests/integration/test_utils_page.py), which checks the node's state
// besides. With a screenshot directory, saves one PNG per pane. Scenarios: `edit` (databases and
// documents), `settings` (security, revs_limit, compaction, conflicts, attachments, local documents;
// the database `library` made by the test), `queries` (Mango, indexes, a design document, views;
// the database `catalog`), `flows` (live changes, replications, users; the database `feed`),
// `member` (signed in as a user who is not a server admin: `shared` theirs, `secret` not).
//   node utils_page.js <scenario> <base url> <user> <password> [screenshot dir]
"use strict";
const { chromium } = require("playwright-core");
const path = require("path");

const [scenario, base, user, password, shots] = process.argv.slice(2);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-proxy-server"],
  });
  const out = {};
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const outside = [], errors = [], sent = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(base)) outside.push(r.url());
      sent.push(r.method() + " " + r.url().slice(base.length));
    });
    // Chromium logs each answer >= 400 as a console error: those are the node's answers the page
    // shows (the test checks them on the page); anything else counts.
    page.on("console", (m) => { if (m.type() === "error" && !/status of \d{3}/.test(m.text())) errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    let step = 0;
    const shot = async (name) => { if (shots) await page.screenshot({ path: path.join(shots, `${++step}-${name}.png`), fullPage: true }); };
    // Waits for the next view the router finishes (body[data-ready] counts them).
    let ready = 0;
    const settled = async () => {
      await page.waitForFunction((n) => Number(document.body.dataset.ready || 0) > n, ready, { timeout: 15000 });
      ready = Number(await page.evaluate(() => document.body.dataset.ready));
    };
    const banner = () => page.evaluate(() => {
      const b = document.getElementById("banner");
      return b.hidden ? null : { text: b.textContent, ok: b.className === "ok" };
    });
    const texts = (selector) => page.$$eval(selector, (els) => els.map((e) => e.textContent));
    const fetchAs = (method, url, body) => page.evaluate(async ([m, u, b]) => {
      const r = await fetch(u, { method: m, headers: { "Content-Type": "application/json" }, body: b === null ? undefined : JSON.stringify(b) });
      return { status: r.status, body: await r.json() };
    }, [method, url, body === undefined ? null : body]);

    // Signing in: the form first, the databases after.
    await page.goto(`${base}/_utils`);
    out.url = page.url();
    await page.waitForSelector("#login:not([hidden])", { timeout: 15000 });
    // By keyboard: the name, Tab, the password, Tab to the button, Enter.
    await page.focus("#user");
    await page.keyboard.type(user);
    await page.keyboard.press("Tab");
    await page.keyboard.type("wrong");
    await page.keyboard.press("Tab");
    out.focusAfterPassword = await page.evaluate(() => document.activeElement.textContent);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.getElementById("login-error").textContent !== "");
    out.wrongPassword = await page.textContent("#login-error");
    await page.fill("#password", password);
    await page.press("#password", "Enter");  // the keyboard signs in too
    await settled();
    out.who = await page.textContent("#who");
    if (scenario === "settings") {
      await settings({ page, settled, banner, shot, out, fetchAs });
    } else if (scenario === "queries") {
      await queries({ page, settled, banner, shot, out });
    } else if (scenario === "member") {
      await member({ page, settled, banner, shot, out });
    } else if (scenario === "flows") {
      await flows({ page, settled, banner, shot, out, fetchAs, password });
    } else {
      out.firstPage = await page.$$eval("#dbs tr[data-db]", (rows) => rows.map((r) => [r.dataset.db, r.cells[1].textContent]));
      out.nextEnabled = await page.isEnabled(".pager button:last-child");
      await shot("databases");
      await page.click(".pager button:last-child");
      await settled();
      out.secondPage = await page.$$eval("#dbs tr[data-db]", (rows) => rows.map((r) => r.dataset.db));
      await page.click(".pager button:first-child");
      await settled();

      // A bad name: the node's own refusal, the list still there.
      await page.fill("#new-db", "Bad Name");
      await page.click("#create-db button[type=submit]");
      await page.waitForSelector("#banner:not([hidden])");
      out.badName = await banner();
      out.listAfterBadName = (await texts("#dbs tr[data-db] td:first-child")).length;
      // A name with a slash is one database (encoded whole), created with q=2 and opened.
      await page.fill("#new-db", "notes/team");
      await page.fill("#new-q", "2");
      await page.click("#create-db button[type=submit]");
      await settled();
      out.created = { banner: await banner(), view: await page.evaluate(() => document.body.dataset.view), hash: await page.evaluate(() => location.hash),
                      figures: await page.textContent("#db-figures") };

      // A new document through the editor.
      await page.click("#new-doc");
      await settled();
      out.newDocTemplate = JSON.parse(await page.inputValue("#editor"));
      await page.fill("#editor", JSON.stringify({ _id: "doc1", n: 1 }));
      await page.click("#save");
      await settled();
      out.saved = { banner: await banner(), id: await page.textContent("#doc-id"), editor: JSON.parse(await page.inputValue("#editor")),
                    revisions: await page.$$eval("#revisions tr[data-rev]", (rows) => rows.map((r) => r.dataset.rev)) };
      await shot("document");

      // Invalid JSON: said on the page, nothing sent.
      const before = sent.length;
      await page.fill("#editor", '{"n": ');
      await page.click("#save");
      out.invalid = { banner: await banner(), requests: sent.slice(before).filter((s) => !s.startsWith("GET")) };

      // A conflict: someone else saves doc1 behind the editor's back; saving says so and offers a reload.
      const doc1 = out.saved.editor;
      out.behindBack = await fetchAs("PUT", "/notes%2Fteam/doc1", { _id: "doc1", _rev: doc1._rev, n: "theirs" });
      await page.fill("#editor", JSON.stringify(Object.assign({}, doc1, { n: "mine" })));
      await page.click("#save");
      await page.waitForSelector("#banner:not([hidden]) button");
      out.conflict = await banner();
      await shot("conflict");
      await page.click("#banner button");
      await settled();
      const reloaded = JSON.parse(await page.inputValue("#editor"));
      out.reloaded = reloaded;
      await page.fill("#editor", JSON.stringify(Object.assign({}, reloaded, { n: "mine" })));
      await page.click("#save");
      await settled();
      out.savedAfterReload = await banner();

      // A 10 MB document: the node's refusal shown.
      await page.fill("#editor", JSON.stringify(Object.assign({}, JSON.parse(await page.inputValue("#editor")), { big: "x".repeat(10 * 1024 * 1024) })));
      await page.click("#save");
      await page.waitForFunction(() => !document.getElementById("banner").hidden && document.getElementById("banner").className !== "ok");
      out.tooLarge = await banner();

      // The documents pane: 25 more, paged by 20, found by id prefix.
      const docs = [];
      for (let i = 0; i < 25; i++) docs.push({ _id: "item" + String(i).padStart(2, "0") });
      out.bulk = (await fetchAs("POST", "/notes%2Fteam/_bulk_docs", { docs })).status;
      await page.click(".crumbs a:nth-of-type(2)");
      await settled();
      out.docsFirst = await page.$$eval("#docs tr[data-id]", (rows) => rows.map((r) => r.dataset.id));
      await page.click(".pager button:last-child");
      await settled();
      out.docsSecond = await page.$$eval("#docs tr[data-id]", (rows) => rows.map((r) => r.dataset.id));
      await page.fill("#id-prefix", "item1");
      await page.press("#id-prefix", "Enter");
      await settled();
      out.found = await page.$$eval("#docs tr[data-id]", (rows) => rows.map((r) => r.dataset.id));
      await shot("documents");

      // Delete a document: two clicks.
      await page.click("#docs tr[data-id='item10'] a");
      await settled();
      await page.click("#delete");
      out.armed = await page.textContent("#delete");
      await page.click("#delete");
      await settled();
      out.deleted = { banner: await banner(), view: await page.evaluate(() => document.body.dataset.view) };

      // Delete the database: its name typed again first.
      await page.click(".crumbs a:first-child");
      await settled();
      await page.click("#dbs tr[data-db='notes/team'] button");
      out.confirmDisabled = !(await page.isEnabled("#dbs tr[data-db='notes/team'] .confirm-delete"));
      await page.fill("#dbs tr[data-db='notes/team'] .confirm-name", "notes/team");
      await page.click("#dbs tr[data-db='notes/team'] .confirm-delete");
      await settled();
      out.dbDeleted = { banner: await banner(), listed: await page.$$eval("#dbs tr[data-db]", (rows) => rows.map((r) => r.dataset.db)) };

      // A database that is not there: the node's 404, not a blank pane.
      await page.evaluate(() => { location.hash = "#/db/nothing-here"; });
      await settled();
      out.missing = await banner();

    }
    // Signing out brings the form back.
    await page.click("#logout");
    await page.waitForSelector("#login:not([hidden])");
    out.signedOut = true;
    out.outside = outside;
    out.errors = errors;
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });

// The database `library` (made by the test: a document `book` with two conflicting leaves, a
// local document `_local/cfg`): its settings, then a conflict resolved and a file attached.
async function settings({ page, settled, banner, shot, out, fetchAs }) {
  await page.click("#dbs tr[data-db='library'] a");
  await settled();
  await page.click("#db-settings");
  await settled();
  out.securityShown = await page.inputValue("#members-names");
  await page.fill("#members-names", "alice, bob");
  await page.fill("#members-roles", "readers");
  await page.fill("#admins-roles", "bosses");
  await page.click("#save-security");
  await page.waitForSelector("#banner.ok");
  out.securitySaved = await banner();
  await page.fill("#revs-limit", "0");  // refused by the node
  await page.click("#save-revs-limit");
  await page.waitForFunction(() => !document.getElementById("banner").hidden && document.getElementById("banner").className !== "ok");
  out.badRevsLimit = await banner();
  await page.fill("#revs-limit", "7");
  await page.click("#save-revs-limit");
  await page.waitForSelector("#banner.ok");
  out.revsLimitSaved = await banner();
  await page.click("#compact");
  await page.waitForFunction(() => document.getElementById("banner").textContent.includes("Compaction"));
  out.compaction = await banner();
  await shot("settings");

  // The conflicted document: both leaves listed, the loser kept.
  await page.evaluate(() => { location.hash = "#/db/library/doc/book"; });
  await settled();
  out.leaves = await page.$$eval("#conflicts tr[data-rev]", (rows) => rows.map((r) => r.dataset.rev));
  await shot("conflicts");
  await page.click(`#conflicts tr[data-rev='${out.leaves[1]}'] button`);
  await settled();
  out.kept = { banner: await banner(), conflictsLeft: await page.$$eval("#conflicts", (t) => t.length),
               editor: JSON.parse(await page.inputValue("#editor")) };

  // A file attached, listed, and downloadable with the page's session.
  await page.setInputFiles("#attachment-file", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("read me") });
  await page.click("#upload");
  await settled();
  out.attached = { banner: await banner(), listed: await page.$$eval("#attachments tr[data-name]", (rows) => rows.map((r) => [r.dataset.name, r.cells[1].textContent])) };
  out.download = await page.evaluate(async () => (await fetch(document.querySelector("#attachments tr[data-name] a").href)).text());
  await page.click("#upload");  // no file chosen
  out.noFile = await banner();

  // Local documents: listed apart, opened, no history.
  await page.evaluate(() => { location.hash = "#/db/library"; });
  await settled();
  await page.check("#local-docs");
  await settled();
  out.localListed = await page.$$eval("#docs tr[data-id]", (rows) => rows.map((r) => r.dataset.id));
  await page.click("#docs tr[data-id='_local/cfg'] a");
  await settled();
  out.local = { editor: JSON.parse(await page.inputValue("#editor")), sections: await page.$$eval("section h2", (hs) => hs.map((h) => h.textContent)) };
}


// The database `catalog` (made by the test: 30 documents {type: "a"|"b", n}): Mango queries and
// indexes, a design document written and refused, a view's rows.
async function queries({ page, settled, banner, shot, out }) {
  // Waits for a refusal said in the banner, other than the one shown now.
  const failed = async () => {
    const before = await page.textContent("#banner");
    await page.waitForFunction((t) => { const b = document.getElementById("banner");
                                        return !b.hidden && b.className !== "ok" && b.textContent !== t; }, before);
  };
  await page.click("#dbs tr[data-db='catalog'] a");
  await settled();
  await page.click("#db-find");
  await settled();
  await page.fill("#mango", JSON.stringify({ selector: { n: { $gt: 25 } }, sort: [{ _id: "asc" }], execution_stats: true }));
  await page.click("#mango-run");
  await page.waitForSelector("#mango-docs");
  out.found = { rows: await page.$$eval("#mango-docs tr", (rows) => rows.length - 1), stats: await page.textContent("#mango-stats"),
                warning: await page.$$eval("#mango-warning", (w) => w.map((e) => e.textContent)),
                json: JSON.parse(await page.textContent("#mango-json")) };
  await page.click("#mango-explain");
  await page.waitForSelector("#explain-index");
  out.explainAllDocs = await page.textContent("#explain-index");
  await page.fill("#mango", '{"selector": ');
  await page.click("#mango-run");
  out.notJson = await banner();
  await page.fill("#mango", JSON.stringify({ selector: 5 }));
  const refused = failed();
  await page.click("#mango-run");
  await refused;
  out.badSelector = await banner();
  await page.fill("#index-fields", "n");
  await page.fill("#index-name", "by-n");
  await page.click("#create-index button[type=submit]");
  await settled();
  out.indexCreated = { banner: await banner(), listed: await page.$$eval("#indexes tr[data-name]", (rows) => rows.map((r) => [r.dataset.name, r.cells[2].textContent])) };
  await page.fill("#mango", JSON.stringify({ selector: { n: { $gt: 25 } } }));
  await page.click("#mango-explain");
  await page.waitForSelector("#explain-index");
  out.explainIndex = await page.textContent("#explain-index");
  await shot("mango");
  await page.click("#indexes tr[data-name='by-n'] button");
  await settled();
  out.indexDeleted = { banner: await banner(), listed: await page.$$eval("#indexes tr[data-name]", (rows) => rows.map((r) => r.dataset.name)) };

  // A design document from the template, then a map function that does not compile.
  await page.click(".crumbs a:nth-of-type(2)");
  await settled();
  await page.click("#db-views");
  await settled();
  out.noViews = await page.textContent("#view .muted");
  await page.click("#new-design");
  await settled();
  await page.click("#save");
  await settled();
  out.designSaved = await banner();
  const ddoc = JSON.parse(await page.inputValue("#editor"));
  ddoc.views.broken = { map: "function (doc) { emit(" };
  await page.fill("#editor", JSON.stringify(ddoc, null, 2));
  await page.click("#save");
  await page.waitForSelector("#editor-error:not([hidden])");
  out.compileError = { inline: await page.textContent("#editor-error"), banner: await banner() };

  // The view's rows: reduced and grouped, then keyed, then a key that is not JSON.
  await page.evaluate(() => { location.hash = "#/db/catalog/views"; });
  await settled();
  await page.check("#view-reduce");
  await page.check("#view-group");
  await page.click("#view-query button[type=submit]");
  await page.waitForSelector("#view-rows");
  out.grouped = await page.$$eval("#view-rows tr", (rows) => rows.slice(1).map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
  await page.uncheck("#view-reduce");
  await page.fill("#view-key", '"a"');
  await page.fill("#view-limit", "3");
  await page.check("#view-include_docs");
  await page.click("#view-query button[type=submit]");
  await page.waitForFunction(() => document.querySelectorAll("#view-rows tr").length === 4);
  out.keyed = { figures: await page.textContent("#view-figures"), ids: await page.$$eval("#view-rows tr", (rows) => rows.slice(1).map((r) => r.cells[2].textContent)),
                doc: JSON.parse(await page.$eval("#view-rows tr:nth-child(2) td:nth-child(4)", (td) => td.textContent)) };
  await shot("views");
  await page.fill("#view-key", "a");
  const badKey = failed();
  await page.click("#view-query button[type=submit]");
  await badKey;
  out.badKey = await banner();
}


// The database `feed` (made by the test, one document): its changes followed live, then filtered by
// a selector; a replication of it (and one that cannot reach its source) as _replicator documents;
// a user created, given a new password, deleted.
async function flows({ page, settled, banner, shot, out, fetchAs, password }) {
  await page.click("#dbs tr[data-db='feed'] a");
  await settled();
  await page.click("#db-changes");
  await settled();
  await page.waitForFunction(() => document.getElementById("changes-state").textContent.startsWith("following since now"));
  out.changesBefore = await page.$$eval("#changes tr[data-id]", (rows) => rows.length);  // since now: none of the old
  out.liveWrite = (await fetchAs("PUT", "/feed/live1", { type: "a" })).status;
  await page.waitForSelector("#changes tr[data-id='live1']", { timeout: 15000 });
  out.liveRow = await page.$eval("#changes tr[data-id='live1']", (r) => [...r.cells].map((c) => c.textContent));
  await page.fill("#changes-selector", '{"type": "b"}');
  await page.press("#changes-selector", "Enter");
  await page.waitForFunction(() => document.getElementById("changes-state").textContent.includes("by the selector"));
  await fetchAs("PUT", "/feed/skipped", { type: "a" });
  await fetchAs("PUT", "/feed/kept", { type: "b" });
  await page.waitForSelector("#changes tr[data-id='kept']", { timeout: 15000 });
  out.filtered = await page.$$eval("#changes tr[data-id]", (rows) => rows.map((r) => r.dataset.id));
  await page.fill("#changes-selector", "{type");
  await page.press("#changes-selector", "Enter");
  out.badSelector = await banner();
  await shot("changes");

  // Replications: one that completes, one that cannot reach its source.
  await page.click("nav a[href='#/replication']");
  await settled();
  out.noReplications = await page.$$eval("#replications tr", (rows) => rows.length);
  await page.fill("#rep-source", "feed");
  await page.fill("#rep-target", "feedcopy");
  await page.check("#rep-create");
  await page.click("#new-replication button[type=submit]");  // without the password
  out.noPassword = await banner();
  await page.fill("#rep-password", password);
  await page.click("#new-replication button[type=submit]");
  await settled();
  out.replicationSaved = await banner();
  await page.fill("#rep-source", "http://127.0.0.1:1/nowhere");
  await page.fill("#rep-target", "feedcopy2");
  await page.check("#rep-continuous");
  await page.click("#new-replication button[type=submit]");
  await settled();
  out.states = {};
  for (let i = 0; i < 300; i++) {  // Refresh as a user would, until both have a state to show (<= 30 s)
    out.states = Object.fromEntries(await page.$$eval("#replications tr[data-doc]", (rows) => rows.map((r) => [r.cells[1].textContent, [r.dataset.state, r.cells[3].textContent]])));
    const values = Object.values(out.states);
    if (values.length === 2 && values.some((v) => v[0] === "completed") && values.some((v) => v[1] !== "")) break;
    await page.waitForTimeout(100);
    await page.click("#rep-refresh");
    await settled();
  }
  await shot("replication");
  const failing = await page.$eval("#replications tr[data-doc]:not([data-state='completed'])", (r) => r.dataset.doc);
  await page.click(`#replications tr[data-doc='${failing}'] button`);
  await settled();
  out.replicationDeleted = { banner: await banner(), left: await page.$$eval("#replications tr[data-doc]", (rows) => rows.length) };

  // Users.
  await page.click("nav a[href='#/users']");
  await settled();
  out.navHere = await page.$eval("nav a.here", (a) => a.textContent);
  await page.fill("#user-name", "carol");
  await page.fill("#user-password", "first-pw");
  await page.fill("#user-roles", "readers, writers");
  await page.click("#new-user button[type=submit]");
  await settled();
  out.userCreated = { banner: await banner(), listed: await page.$$eval("#users tr[data-user]", (rows) => rows.map((r) => r.dataset.user)) };
  await page.fill("#users tr[data-user='carol'] .user-password", "second-pw");
  await page.fill("#users tr[data-user='carol'] .user-roles", "readers");
  await page.click("#users tr[data-user='carol'] .user-save");
  await settled();
  out.userSaved = await banner();
  await shot("users");
  await page.fill("#user-name", "carol");  // taken
  await page.fill("#user-password", "x");
  await page.click("#new-user button[type=submit]");
  await page.waitForFunction(() => document.getElementById("banner").className !== "ok");
  out.userTaken = await banner();
}


// A user who is not a server admin: no list of every database, no users or cluster links; a
// database they are a member of opens and is remembered, one they are not is refused.
async function member({ page, settled, banner, shot, out }) {
  out.nav = await page.$$eval("nav a", (as) => as.filter((a) => !a.hidden).map((a) => a.textContent));
  out.own = await page.textContent("#view .muted");
  await page.fill("#open-db", "shared");
  await page.press("#open-db", "Enter");
  await settled();
  out.shared = await page.$$eval("#docs tr[data-id]", (rows) => rows.map((r) => r.dataset.id));
  await page.click(".crumbs a:first-child");
  await settled();
  await page.fill("#open-db", "secret");
  await page.click("#open-db-form button[type=submit]");
  await settled();
  out.secret = await banner();
  await page.click(".crumbs a:first-child, nav a[href='#/']");
  await settled();
  out.remembered = await page.$$eval("#dbs tr[data-db]", (rows) => rows.map((r) => [r.dataset.db, r.cells[1].textContent]));
  await shot("member");
}
