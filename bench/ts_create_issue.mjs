// A tool schema of the size real servers list (github-mcp-server's create_issue
// shape), its toolset payload and accepted arguments: shared by the TypeScript
// gate benches (ts_gate_bench.mjs, ts_gate_ab.mjs).

export const CREATE_ISSUE = {
  name: "create_issue",
  description: "Create a new issue in a GitHub repository",
  inputSchema: {
    type: "object",
    properties: {
      owner: { type: "string", description: "Repository owner" },
      repo: { type: "string", description: "Repository name" },
      title: { type: "string", description: "Issue title" },
      body: { type: "string", description: "Issue body content" },
      assignees: { type: "array", items: { type: "string" }, description: "Usernames to assign" },
      labels: { type: "array", items: { type: "string" }, description: "Labels to apply" },
      milestone: { type: "number", description: "Milestone number" },
      type: { type: "string", description: "Type of this issue" },
    },
    required: ["owner", "repo", "title"],
  },
};

export const issueArgs = { owner: "octo", repo: "hello", title: "Bug", body: "It breaks.", labels: ["bug", "p1"], assignees: ["me"], milestone: 3 };

/** The toolset payload body (without its digest) of namespace github holding create_issue v1, digests by `sdk`. */
export function issueBodyOf(sdk) {
  return {
    namespace: "github",
    tools: [
      {
        name: "create_issue",
        current: 1,
        versions: [{ version: 1, digest: sdk.digest(CREATE_ISSUE), state: "active", sunset: null, definition: CREATE_ISSUE, route: [] }],
        retired: [],
      },
    ],
    aliases: [],
  };
}
