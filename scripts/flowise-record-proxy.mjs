// A recording proxy between the host and Flowise, for scripts/e2e-flowise.sh (FLOWISE_E2E_RECORD):
// forwards every request to Flowise unchanged and writes the exchanges, secrets replaced by
// placeholders, to a JSON file that plugins/chatflow's replay test serves
// (plugins/chatflow/testdata/flowise/exchanges.json). Repeated GETs (health pings) are kept once.
//   node flowise-record-proxy.mjs <port> <Flowise URL> <out.json> <secret>=<placeholder>...
import http from 'node:http';
import fs from 'node:fs';

const [port, target, out, ...pairs] = process.argv.slice(2);
const secrets = pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]).filter(([s]) => s);
const redact = (s) => secrets.reduce((acc, [secret, ph]) => acc.split(secret).join(ph), s);
// Tool credentials (rft_…) are minted per call: any of them becomes one placeholder.
const scrub = (s) => redact(s).replace(/rft_[A-Za-z0-9._-]+/g, '<reelforge_token>');
const exchanges = [];
const seenGets = new Set();

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    const headers = { ...req.headers };
    delete headers.host;
    delete headers['content-length'];
    let answer;
    try {
      answer = await fetch(target + req.url, { method: req.method, headers, body: body.length ? body : undefined });
    } catch (e) {
      res.writeHead(502).end(String(e));
      return;
    }
    const text = await answer.text();
    const ctype = answer.headers.get('content-type') || '';
    res.writeHead(answer.status, { 'content-type': ctype }).end(text);
    const key = req.method + ' ' + req.url;
    if (req.method === 'GET' && seenGets.has(key)) return;
    seenGets.add(key);
    let reqBody = body.length ? scrub(body.toString()) : undefined;
    try { reqBody = reqBody && JSON.parse(reqBody); } catch { /* kept as text */ }
    let resBody = scrub(text);
    try { resBody = JSON.parse(resBody); } catch { /* kept as text */ }
    exchanges.push({
      request: { method: req.method, path: req.url, authorization: scrub(req.headers.authorization || ''), body: reqBody },
      response: { status: answer.status, content_type: ctype, body: resBody },
    });
    fs.writeFileSync(out, JSON.stringify(exchanges, null, 2) + '\n');
  });
}).listen(Number(port), '127.0.0.1');
