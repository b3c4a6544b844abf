// Opens a Chrome trace JSON file with Chrome DevTools' own trace engine
// (@paulirish/trace_engine, the Performance panel's code) and prints
// "tid<TAB>name<TAB>parent name" for every span it places in its call
// trees ("-" for a root), sorted: what a user of the Performance panel sees.
import fs from 'node:fs';
import * as Trace from '@paulirish/trace_engine/models/trace/trace.js';

// The engine needs this one DOM class (its README says to polyfill it).
globalThis.DOMRect = class {
  constructor(x, y, w, h) { Object.assign(this, {x, y, width: w, height: h}); }
};
const json = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(json.traceEvents);
const out = [];
for (const [, proc] of model.parsedTrace().data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const todo = [...(thread.tree?.roots ?? [])];
    while (todo.length) {
      const node = todo.pop();
      out.push(`${tid}\t${node.entry.name}\t${node.parent ? node.parent.entry.name : '-'}`);
      todo.push(...node.children);
    }
  }
}
process.stdout.write(out.sort().join('\n') + (out.length ? '\n' : ''));
