// The official MCP TypeScript SDK client (v1, pinned in package.json)
// against `ptmcp serve`: node client.mjs PTMCP SNAPSHOT_ID_1 SNAPSHOT_ID_2
//
// Run by tests/e2e/t0903-mcp-sdk.sh with stand-ins for the other ptkit
// tools beside PTMCP and two hand-made snapshots (the second decoded).
// The SDK checks every result against its schema and every
// structuredContent against the tool's outputSchema, so a pass here means
// a real client accepts what ptmcp sends.  Prints TAP lines.
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [ptmcp, id1, id2] = process.argv.slice(2);
const fakeDir = process.env.FAKE_DIR;
const store = process.env.PTKIT_STORE;
let n = 0;
let failed = 0;

function check(cond, name, detail) {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${name}`);
  if (!cond) {
    failed++;
    console.log(`#   got: ${JSON.stringify(detail)}`);
  }
}

async function waitFor(pred) {
  for (let i = 0; i < 300; i++) {
    if (pred()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

const transport = new StdioClientTransport({
  command: ptmcp, args: ['serve'], env: { ...process.env }, stderr: 'inherit',
});
const client = new Client({ name: 'ptkit-conformance', version: '0.1.0' });

try {
  await client.connect(transport);
  check(client.getServerVersion()?.name === 'ptmcp', 'serverInfo.name is ptmcp',
    client.getServerVersion());
  check(client.getServerCapabilities()?.tools !== undefined, 'tools capability',
    client.getServerCapabilities());

  const { tools } = await client.listTools();
  check(tools.length === 11, 'tools/list: eleven tools the SDK accepts', tools.length);

  const doc = await client.callTool({ name: 'trace_doctor', arguments: {} });
  check(!doc.isError && doc.structuredContent?.report?.recorders?.emu?.usable === true,
    'trace_doctor: structuredContent passes its outputSchema', doc);

  const dec = await client.callTool({ name: 'trace_decode', arguments: { snapshot_id: id1 } });
  check(!dec.isError && dec.structuredContent?.analysis_id === 'default',
    'trace_decode: decoded', dec);

  const q = await client.callTool({ name: 'trace_query',
    arguments: { snapshot_id: id1, kind: 'hotpaths', limit: 3 } });
  check(!q.isError && q.structuredContent?.result?.rows?.length === 3,
    'trace_query: three rows', q);

  const cmp = await client.callTool({ name: 'trace_compare',
    arguments: { a: id1, b: id2, fail_on: ['self_ns:+10%'] } });
  check(!cmp.isError && cmp.structuredContent?.crossed === true, 'trace_compare: crossed', cmp);

  const pr = await client.callTool({ name: 'trace_prune',
    arguments: { max_count: 100, dry_run: true } });
  check(!pr.isError && pr.structuredContent?.removed?.length === 0, 'trace_prune: dry run', pr);

  const st = await client.callTool({ name: 'trace_start', arguments: { program: ['./app'] } });
  const sid = st.structuredContent?.session_id;
  check(!st.isError && st.structuredContent?.state === 'running', 'trace_start: running', st);
  let status;
  for (let i = 0; i < 200; i++) {
    status = await client.callTool({ name: 'trace_status', arguments: { session_id: sid } });
    if (status.structuredContent?.state !== 'running') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(status.structuredContent?.state === 'done' &&
    status.structuredContent?.snapshots?.length === 1, 'trace_status: done, one snapshot', status);

  const bad = await client.callTool({ name: 'trace_query',
    arguments: { snapshot_id: id1, kind: 'everything' } });
  check(bad.isError === true && /must be one of/.test(bad.content?.[0]?.text),
    'a schema violation is an isError result', bad);

  let code;
  await client.callTool({ name: 'trace_nope', arguments: {} }).catch((e) => { code = e.code; });
  check(code === -32602, 'an unknown tool is -32602', code);

  check(JSON.stringify(await client.ping()) === '{}', 'ping', null);

  // Cancellation: the SDK sends notifications/cancelled on abort.
  fs.writeFileSync(`${fakeDir}/decode.hang`, '');
  fs.rmSync(`${store}/snapshots/${id2}/derived`, { recursive: true, force: true });
  const ac = new AbortController();
  let progressed = 0;
  const call = client.callTool({ name: 'trace_decode', arguments: { snapshot_id: id2 } },
    undefined, { signal: ac.signal, onprogress: () => { progressed++; } });
  const rejected = call.then(() => false, () => true);
  await waitFor(() => progressed > 0);
  const pid = Number(fs.readFileSync(`${fakeDir}/ptdecode.pid`, 'utf8'));
  ac.abort();
  check(await rejected, 'abort rejects the call', null);
  check(progressed > 0, 'progress arrived while decoding', progressed);
  check(await waitFor(() => !fs.existsSync(`/proc/${pid}`)), 'the decoder was ended', pid);
  // The server removes the temporary analysis after it has reaped the
  // decoder, so under load that can come a moment after the pid is gone.
  const derived = `${store}/snapshots/${id2}/derived`;
  check(await waitFor(() => fs.readdirSync(derived).length === 0),
    'no temporary analysis left', fs.readdirSync(derived));
  check(JSON.stringify(await client.ping()) === '{}', 'the server goes on after a cancel', null);
} catch (e) {
  check(false, 'no exception', `${e?.code ?? ''} ${e?.message ?? e}`);
} finally {
  await client.close();
}
console.log(`1..${n}`);
process.exitCode = failed > 0 ? 1 : 0;
