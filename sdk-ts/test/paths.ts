import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (tests run from sdk-ts/dist/test). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
