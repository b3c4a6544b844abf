// An agent's session with the official MCP TypeScript SDK client against
// `ptmcp serve` and the real tools: node agent.mjs PTMCP AGENT
//
// Run by tests/e2e/t0906-mcp-agent.sh, which passes AGENT_HITS (the
// "hits" line the program prints: how often lookup's branch went one way).  AGENT is tests/fixtures/mcp/agent
// (-O2 -flto: an inlined helper, cloned functions, a data-dependent
// branch, two threads, "slow" for a v2).  Like a client that shows the
// model only content[].text, this reads nothing else: every id and
// number comes from the text (its summary line, or the serialized result
// after it).  Each question is answered with at most two tool calls
// after the recording, checked against the counts the program printed.
// Prints TAP lines.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [ptmcp, agent] = process.argv.slice(2);
const BUDGET = 8192;
let n = 0;
let failed = 0;
let calls = 0;
let maxText = 0;

function check(cond, name, detail) {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${name}`);
  if (!cond) {
    failed++;
    console.log(`#   got: ${JSON.stringify(detail)?.slice(0, 3000)}`);
  }
}

const transport = new StdioClientTransport({
  command: ptmcp, args: ['serve'], env: { ...process.env }, stderr: 'inherit',
});
const client = new Client({ name: 'ptkit-agent', version: '0.1.0' });

// A tool call as the model sees it: the text alone.
async function ask(name, args) {
  calls++;
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content ?? []).filter((c) => c.type === 'text')
    .map((c) => c.text).join('\n');
  maxText = Math.max(maxText, Buffer.byteLength(text));
  if (r.isError) throw new Error(`${name}: ${text}`);
  return text;
}

// The serialized result after the summary line.
function result(text) {
  return JSON.parse(text.slice(text.indexOf('\n') + 1));
}

async function record(argv) {
  const start = await ask('trace_start', { program: argv, recorder: 'emu' });
  const sid = /^Session (\S+) is recording/.exec(start)?.[1];
  let status = '';
  for (let i = 0; i < 600 && !/ is (done|failed|cancelled) /.test(status); i++) {
    await new Promise((r) => setTimeout(r, 100));
    status = await ask('trace_status', { session_id: sid });
  }
  const snap = /snapshots: (\S+?)[;.]/.exec(status)?.[1];
  const dec = await ask('trace_decode', { snapshot_id: snap });
  return { sid, status, snap, dec };
}

// What the program printed when run natively (t0906 passes it).
const hits = Number(process.env.AGENT_HITS);

try {
  await client.connect(transport);
  const doc = await ask('trace_doctor', {});
  check(/^Recorders that work here: emu[.,]/.test(doc), 'doctor: the text names the recorder that works', doc);

  const v1 = await record([agent]);
  check(/^Session \S+ is done after \d+ ms; snapshots: \S+; the program exited with 0; the recorder exited with 0\./.test(v1.status),
    'status: the text names the session, its state and its snapshot', v1.status);
  check(new RegExp(`^Snapshot ${v1.snap} decoded`).test(v1.dec), 'decode: the text names the snapshot', v1.dec);

  // 1. Which functions ran, how long, who called whom.
  let before = calls;
  const hot = await ask('trace_query', { snapshot_id: v1.snap, kind: 'hotpaths', module: 'agent',
    limit: 500 });
  const callsLookup = await ask('trace_query', { snapshot_id: v1.snap, kind: 'calls', function: 'lookup' });
  const rows = result(hot).result.rows;
  const fn = (name) => rows.find((r) => r.name === name);
  check(calls - before === 2 && rows.every((r) => r.module.endsWith('/agent')) &&
    fn('step')?.calls === 3000 && fn('tick')?.calls === 50000 && fn('lookup')?.calls === 40 &&
    fn('score.constprop.0')?.calls === 40 && fn('resolve.constprop.0')?.calls === 40,
    'question 1: the calls of each function, from hotpaths', rows.slice(0, 12));
  check(/Times: emulated, shared by all threads \(host time under emulation\); instruction counts are exact\./.test(hot),
    'question 1: the text says how the times were kept', hot.split('\n')[0]);
  check(/^calls of \S+: lookup: 1 callers, 0 callees \(function lookup\)\. Rows 1-1 of 1: main relation=caller calls=40 /.test(callsLookup),
    'question 1: who called lookup, in the summary line', callsLookup.split('\n')[0]);

  const tree = await ask('trace_query', { snapshot_id: v1.snap, kind: 'tree', function: 'main',
    depth: 1, limit: 500 });
  const paths = result(tree).result.rows;
  check(paths.find((r) => r.path === 'main;step')?.calls === 3000 &&
    paths.find((r) => r.path === 'main;lookup')?.calls === 40 && paths.every((r) => r.depth <= 1),
  'question 1: main\'s callees in one call, as a tree', paths);

  // 2. Where time went inside one function, down to its inlined helpers.
  before = calls;
  const inl = await ask('trace_query', { snapshot_id: v1.snap, kind: 'hotpaths', group: 'inline',
    function: 'score', sort: 'self_insns' });
  const ir = result(inl).result;
  const score = ir.rows.find((r) => r.name === 'score.constprop.0');
  const mix = ir.rows.find((r) => r.name === 'mix32');
  check(calls - before === 1 && ir.function === 'score.constprop.0' && ir.rows.length === 2 &&
    mix?.calls === 40 && score?.calls === 40 && score.self_insns + mix.insns === score.insns &&
    /\(function score\.constprop\.0\)/.test(inl),
    'question 2: score is score.constprop.0; mix32 inside it, its instructions apart', ir);
  const mixCalls = await ask('trace_query', { snapshot_id: v1.snap, kind: 'calls', function: 'mix32' });
  check(/: score\.constprop\.0 relation=caller calls=40 /.test(mixCalls.split('\n')[0]),
    'question 2: calls accepts the inlined helper hotpaths lists', mixCalls.split('\n')[0]);

  // 3. What the other thread did when main entered lookup.
  before = calls;
  const first = await ask('trace_query', { snapshot_id: v1.snap, kind: 'timeline', function: 'lookup', limit: 1 });
  const span = result(first).result.rows[0];
  const at = await ask('trace_query', { snapshot_id: v1.snap, kind: 'at', span_id: span.id });
  const stacks = result(at).result.rows;
  const other = stacks.filter((r) => r.tid !== span.tid);
  check(calls - before === 2 && stacks.some((r) => r.id === span.id) && other.length > 0 &&
    other[0].name === '__clone' && other.every((r) => r.start_ns <= span.start_ns && span.start_ns < r.end_ns),
    'question 3: the other thread\'s stack at the instant main entered lookup', stacks);

  // 4. Which branches of the hot loop were taken.
  before = calls;
  const br = await ask('trace_query', { snapshot_id: v1.snap, kind: 'branches', function: 'lookup' });
  const data = result(br).result.rows.find((r) => r.executed === 40 * 64 && r.taken === hits);
  check(calls - before === 1 && data !== undefined && data.target !== '0x0' &&
    /taken means the jump was taken \(to target\)/.test(br.split('\n')[0]),
    'question 4: the data-dependent branch executed 2560 times, taken 1280', result(br).result.rows);

  // 5. How two runs differ: v2 does twice lookup's work.
  const v2 = await record([agent, 'slow']);
  before = calls;
  const cmp = await ask('trace_compare', { a: v1.snap, b: v2.snap, changed_only: true });
  const line = cmp.split('\n')[0];
  check(calls - before === 1 && /slower \d+: lookup \+\d+ self_insns \(\d+->\d+\)/.test(line) &&
    result(cmp).crossed === false,
    'question 5: the text names lookup as slower with its instructions', line);
  const rid = result(cmp).report_id;
  const again = await ask('trace_compare', { report_id: rid, changed_only: true, limit: 1 });
  check(result(again).comparison.rows.length === 1 && result(again).first_row === 0 &&
    result(again).next_cursor === 'o1', 'a kept report reads back by report_id, paged', again.split('\n')[0]);

  // Paging: step's 3,000-span timeline, limit 500, every row once.
  const seen = new Map();
  let cursor;
  let pages = 0;
  let total;
  do {
    const page = await ask('trace_query', { snapshot_id: v1.snap, kind: 'timeline', function: 'step',
      limit: 500, ...(cursor ? { cursor } : {}) });
    const r = result(page);
    total = r.result.total_rows;
    for (const row of r.result.rows) seen.set(row.id, (seen.get(row.id) ?? 0) + 1);
    cursor = /More rows: call again with cursor (\S+)\.$/.exec(page.split('\n')[0])?.[1];
    pages++;
  } while (cursor && pages < 1000);
  check(total === 3000 && seen.size === 3000 && [...seen.values()].every((c) => c === 1),
    `paging: 3000 rows, each once, in ${pages} pages`, { total, size: seen.size, pages });
  check(maxText <= BUDGET, `every answer within ${BUDGET} bytes (largest ${maxText})`, maxText);

  // trace_start checks before it starts.
  let err;
  await ask('trace_start', { program: ['./no-such-program'] }).catch((e) => { err = e.message; });
  check(err === "trace_start: trace_start: program[0] './no-such-program' does not exist.",
    'trace_start: a missing program is an immediate error', err);
  err = undefined;
  await ask('trace_start', { program: [agent], recorder: 'emu', trigger_symbol: 'nope' })
    .catch((e) => { err = e.message; });
  check(err === `trace_start: trace_start: trigger_symbol 'nope' is not a function of ${agent} ` +
    '(the recorders look for it in the program\'s own symbol tables).',
  'trace_start: an unknown trigger symbol is an immediate error', err);
} catch (e) {
  check(false, 'no exception', `${e?.code ?? ''} ${e?.message ?? e}`);
} finally {
  await client.close();
}
console.log(`1..${n}`);
process.exitCode = failed > 0 ? 1 : 0;
