// JSON Web Tokens signed by Node.js's own crypto (OpenSSL), for tests/integration/test_jwt.py.
// Reads one JSON request on stdin: {"keys": ["rsa", "ec256", "ec384", "ec521", ...], "tokens": [
// {"alg": "RS256", "key": "rsa", "header": {...}, "claims": {...}}, ...]} and prints
// {"keys": {name: public PEM}, "tokens": [token, ...]}. HS* tokens name their secret as "secret"
// (base64); "alg": "none" makes an unsigned token.
"use strict";
const crypto = require("crypto");

const b64url = (buf) => Buffer.from(buf).toString("base64").replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
const curves = { ec256: "prime256v1", ec384: "secp384r1", ec521: "secp521r1" };
const digests = { 256: "sha256", 384: "sha384", 512: "sha512" };

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const req = JSON.parse(input);
  const pairs = {};
  const keys = {};
  for (const name of req.keys) {
    pairs[name] = name.startsWith("rsa")
      ? crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
      : crypto.generateKeyPairSync("ec", { namedCurve: curves[name] });
    keys[name] = pairs[name].publicKey.export({ type: "spki", format: "pem" });
  }
  const tokens = req.tokens.map((t) => {
    const header = Object.assign({ alg: t.alg, typ: "JWT" }, t.header || {});
    const message = b64url(JSON.stringify(header)) + "." + b64url(JSON.stringify(t.claims));
    if (t.alg === "none") return message + ".";
    const digest = digests[t.alg.slice(2)];
    let sig;
    if (t.alg.startsWith("HS")) {
      sig = crypto.createHmac(digest, Buffer.from(t.secret, "base64")).update(message).digest();
    } else if (t.alg.startsWith("RS")) {
      sig = crypto.sign(digest, Buffer.from(message), pairs[t.key].privateKey);
    } else {
      sig = crypto.sign(digest, Buffer.from(message), { key: pairs[t.key].privateKey, dsaEncoding: "ieee-p1363" });
    }
    return message + "." + b64url(sig);
  });
  process.stdout.write(JSON.stringify({ keys, tokens }) + "\n");
});
