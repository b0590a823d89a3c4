// The Obsidian side of tests/test_isomorphic_git.py: what obsidian-git does on mobile, with isomorphic-git.
// Usage: node obsidian_side.mjs URL DIR FACT_PATH NEW_TEXT
// Clones URL into DIR, reads every record, replaces the body of FACT_PATH with NEW_TEXT (a hand edit),
// commits and pushes. Prints one JSON line: {"records": {path: id}, "commit": sha, "pushed": ok}.
import fs from "node:fs";
import path from "node:path";
import git from "isomorphic-git";
import http from "isomorphic-git/http/node";

const [url, dir, factPath, newText] = process.argv.slice(2);
await git.clone({ fs, http, dir, url, singleBranch: true });
const records = {};
for (const file of await git.listFiles({ fs, dir })) {
  if (!/^(topics|facts|relations)\/.*\.md$/.test(file)) continue;
  const text = fs.readFileSync(path.join(dir, file), "utf8");
  const front = text.match(/^---\n([\s\S]*?)\n---\n/);
  if (!front) throw new Error(`${file}: no frontmatter`);
  const id = front[1].match(/^id: (.+)$/m);
  if (!id) throw new Error(`${file}: no id`);
  records[file] = id[1].trim();
}
const full = path.join(dir, factPath);
const text = fs.readFileSync(full, "utf8");
const end = text.indexOf("\n---\n", 4) + 5;
fs.writeFileSync(full, text.slice(0, end) + newText + "\n");
await git.add({ fs, dir, filepath: factPath });
const commit = await git.commit({
  fs, dir, message: "vault backup: hand edit on the phone",
  author: { name: "Phone Person", email: "phone@example.com" },
});
const result = await git.push({ fs, http, dir, remote: "origin", ref: (await git.currentBranch({ fs, dir })) });
console.log(JSON.stringify({ records, commit, pushed: result.ok === true }));
