/**
 * JSON Pointers (RFC 6901): one token read back, a pointer split into its
 * tokens. Written out once for the package, as registry/pointers.py is for
 * the Python SDK.
 */

/** A reference token as a pointer wrote it, read back: `~1` is `/`, `~0` is `~`. */
export function unescape(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** The tokens of a pointer (`""`, the whole document, has none), unescaped. */
export function split(pointer: string): string[] {
  return pointer.split("/").slice(1).map(unescape);
}
