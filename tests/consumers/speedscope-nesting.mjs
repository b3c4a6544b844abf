// Imports a Chrome trace JSON file with speedscope's own importer (the
// pinned npm package ships only its browser bundle: it is run here without
// its user interface, the importer reached through one hook added to the
// bundle's text) and prints "tid<TAB>frame<TAB>parent frame" for every
// call it builds, sorted; its warnings ("Tried to end X when Y was on the
// top of the stack") go to stderr.  The hook names the bundle's minified
// importer, so it belongs to the version package.json pins.
import fs from 'node:fs';
import vm from 'node:vm';
import {createRequire} from 'node:module';

const require = createRequire(import.meta.url);
const dir = require.resolve('speedscope/package.json').replace(/package\.json$/, 'dist/release/');
const file = fs.readdirSync(dir).find((f) => /^speedscope-.*\.js$/.test(f));
const head = '"use strict";(()=>{';
let src = fs.readFileSync(dir + file, 'utf8');
if (!src.startsWith(head) || !src.includes('function _f(t){return Ny(t)?xy(t):sf(t)?Dl(t.traceEvents)')) {
  process.stderr.write(`speedscope-nesting: ${file}: not the bundle this hook knows\n`);
  process.exit(2);
}
src = head + 'globalThis.__importer={run:()=>_f,init:()=>hf};' + src.slice(head.length);
const warnings = [];
const nothing = new Proxy(function () {}, {
  get: (t, k) => (k === Symbol.toPrimitive ? () => '' : nothing),
  apply: () => nothing, construct: () => nothing,
});
const ctx = {
  console: {log() {}, info() {}, debug() {}, warn: (m) => warnings.push(String(m)), error: (m) => warnings.push(String(m))},
  window: nothing, document: nothing, navigator: nothing, location: nothing,
  setTimeout, clearTimeout, TextDecoder, TextEncoder,
};
for (const k of ['Uint8Array', 'Uint16Array', 'Uint32Array', 'Int32Array', 'Float32Array', 'Float64Array',
  'ArrayBuffer', 'DataView', 'Promise', 'Map', 'Set', 'WeakMap', 'Math', 'JSON', 'Date', 'Object', 'Array',
  'String', 'Number', 'Error', 'RegExp', 'Symbol', 'Reflect', 'Proxy', 'parseInt', 'parseFloat', 'isNaN', 'BigInt'])
  ctx[k] = globalThis[k];
ctx.globalThis = ctx.self = ctx;
vm.createContext(ctx);
try {
  vm.runInContext(src, ctx);
} catch {
  // the user interface needs a DOM; the importer does not
}
ctx.__importer.init()();
const group = ctx.__importer.run()(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')));
const out = [];
for (const prof of group.profiles) {
  const m = /\(tid (\d+)\)/.exec(prof.getName());
  const tid = m ? m[1] : prof.getName();
  const stack = [];
  prof.forEachCall((node) => {
    out.push(`${tid}\t${node.frame.name}\t${stack.length ? stack.at(-1) : '-'}`);
    stack.push(node.frame.name);
  }, () => { stack.pop(); });
}
process.stdout.write(out.sort().join('\n') + (out.length ? '\n' : ''));
for (const w of warnings) process.stderr.write(`speedscope: ${w}\n`);
