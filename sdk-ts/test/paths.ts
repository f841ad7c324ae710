import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (tests run from sdk-ts/dist/test). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

const CANDIDATES = [
  // the shared/ folder beside the repository, as tests/test_corpus.py finds it
  resolve(REPO, "..", "shared", "corpus", "github-mcp-server.jsonl"),
  // beside the folder of worktrees
  resolve(REPO, "..", "..", "shared", "corpus", "github-mcp-server.jsonl"),
];

/** The corpus of real tool histories, where one is found. */
export const CORPUS = CANDIDATES.find((path) => existsSync(path)) ?? CANDIDATES[0]!;
