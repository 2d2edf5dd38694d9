// What the test host page needs, bundled for the browser by lib/browser.mjs:
// the host side of MCP Apps from the package itself, and the official client.
export { AppBridge, PostMessageTransport, getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
export { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
