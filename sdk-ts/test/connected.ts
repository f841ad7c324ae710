// The official SDK's Client on an in-memory transport to a server, counting list_changed.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

export async function connected(server: Server): Promise<{ client: Client; changes: () => number }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "0" });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    changes += 1;
  });
  await client.connect(clientSide);
  return { client, changes: () => changes };
}
