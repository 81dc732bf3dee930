// A real MCP server for tests, made with the official SDK (McpServer) on loopback: the Streamable HTTP transport
// at /mcp (one transport and one server per MCP session, as the SDK's examples do) and the older HTTP+SSE transport
// alone at /sse (GET /sse, POST /messages). Its tools: `echo` (text and structured content), `progress` (sends
// notifications/progress, then answers), `slow` (waits, or stops when cancelled), `fail` (throws), `picture` (an
// image and a resource link), `grow` (adds the tool `extra` to every session: notifications/tools/list_changed),
// and `whoami` (answers the Authorization header it was sent). Every call is recorded with its `_meta` and
// headers; every cancellation too. /garbage answers nonsense to everything; `garbageCalls` makes /mcp answer
// nonsense to tools/call.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface McpRecordedCall {
  tool: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown> | undefined;
  authorization: string | undefined;
  /** The W3C trace context header the call's request carried. */
  traceparent: string | undefined;
}

export class McpTestServer {
  /** Every tools/call received, in order. */
  readonly calls: McpRecordedCall[] = [];
  /** The tools whose calls were cancelled (notifications/cancelled reached the handler's signal). */
  readonly cancelled: string[] = [];
  private readonly servers = new Set<McpServer>();
  private readonly streamable = new Map<string, StreamableHTTPServerTransport>();
  private readonly sse = new Map<string, SSEServerTransport>();
  private grown = false;
  private http: Server | undefined;
  private port = 0;

  /** Starts on a free port of 47000..47999 on 127.0.0.1. */
  static async start(): Promise<McpTestServer> {
    const server = new McpTestServer();
    await server.listen();
    return server;
  }

  /** The Streamable HTTP endpoint. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  /** The older HTTP+SSE endpoint (this path speaks nothing else). */
  get sseUrl(): string {
    return `http://127.0.0.1:${this.port}/sse`;
  }

  /** An endpoint that answers every request with an HTML page. */
  get garbageUrl(): string {
    return `http://127.0.0.1:${this.port}/garbage`;
  }

  /** How many MCP sessions were opened (initialize requests). */
  sessions = 0;
  /** How many HTTP requests reached it, on any path. */
  requests = 0;
  /** While set, tools/call requests are answered with a body that is not JSON-RPC (everything else as usual). */
  garbageCalls = false;

  async close(): Promise<void> {
    for (const s of this.servers) await s.close().catch(() => undefined);
    this.http?.closeAllConnections();
    await new Promise<void>((resolve) => (this.http ? this.http.close(() => resolve()) : resolve()));
  }

  private build(): McpServer {
    const server = new McpServer(
      { name: 'canopy-test', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    const record = (
      tool: string,
      args: Record<string, unknown>,
      extra: { _meta?: Record<string, unknown>; requestInfo?: { headers: Record<string, unknown> } },
    ) => {
      const auth = extra.requestInfo?.headers.authorization;
      const traceparent = extra.requestInfo?.headers.traceparent;
      this.calls.push({
        tool,
        args,
        meta: extra._meta,
        authorization: typeof auth === 'string' ? auth : undefined,
        traceparent: typeof traceparent === 'string' ? traceparent : undefined,
      });
    };
    server.registerTool(
      'echo',
      {
        description: 'Echoes a text back.',
        inputSchema: { text: z.string() },
        outputSchema: { echoed: z.string() },
      },
      (args, extra) => {
        record('echo', args, extra);
        return {
          content: [{ type: 'text', text: `echo: ${args.text}` }],
          structuredContent: { echoed: args.text },
        };
      },
    );
    server.registerTool(
      'progress',
      {
        description: 'Reports each step, then answers.',
        inputSchema: { steps: z.number().int().min(1).max(10) },
      },
      async (args, extra) => {
        record('progress', args, extra);
        const token = extra._meta?.progressToken;
        for (let i = 1; i <= args.steps; i++) {
          if (token !== undefined) {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: i, total: args.steps, message: `step ${i}` },
            });
          }
        }
        return { content: [{ type: 'text', text: `${args.steps} steps done` }] };
      },
    );
    server.registerTool(
      'slow',
      { description: 'Waits a while (stops when cancelled).', inputSchema: { ms: z.number().int().min(0) } },
      async (args, extra) => {
        record('slow', args, extra);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, args.ms);
          extra.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            this.cancelled.push('slow');
            resolve();
          });
        });
        return { content: [{ type: 'text', text: `waited ${args.ms} ms` }] };
      },
    );
    server.registerTool('fail', { description: 'Always fails.', inputSchema: {} }, (args, extra) => {
      record('fail', args, extra);
      throw new Error('the disk is full');
    });
    server.registerTool(
      'picture',
      { description: 'A picture and a link.', inputSchema: {} },
      (args, extra) => {
        record('picture', args, extra);
        return {
          content: [
            { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
            { type: 'resource_link', uri: 'file:///readme.md', name: 'readme.md', description: 'the readme' },
          ],
        };
      },
    );
    server.registerTool('grow', { description: 'Adds the tool "extra".', inputSchema: {} }, (args, extra) => {
      record('grow', args, extra);
      if (!this.grown) {
        this.grown = true;
        for (const s of this.servers) addExtra(s);
      }
      return { content: [{ type: 'text', text: 'grown' }] };
    });
    server.registerTool('whoami', { description: 'Who the caller is.', inputSchema: {} }, (args, extra) => {
      record('whoami', args, extra);
      const auth = extra.requestInfo?.headers.authorization;
      if (typeof auth !== 'string')
        return { content: [{ type: 'text', text: 'no credentials' }], isError: true };
      return { content: [{ type: 'text', text: auth }] };
    });
    if (this.grown) addExtra(server);
    this.servers.add(server);
    return server;
  }

  private async listen(): Promise<void> {
    this.http = createServer((req, res) => {
      void this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
      });
    });
    for (let attempt = 0; ; attempt++) {
      const port = 47_000 + Math.floor(Math.random() * 1_000);
      try {
        await new Promise<void>((resolve, reject) => {
          this.http!.once('error', reject);
          this.http!.listen(port, '127.0.0.1', () => {
            this.http!.off('error', reject);
            resolve();
          });
        });
        this.port = port;
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt > 50) throw err;
      }
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    if (url.pathname === '/garbage') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"this is": not json');
      return;
    }
    if (url.pathname === '/mcp') {
      if (this.garbageCalls && (body as { method?: unknown } | undefined)?.method === 'tools/call') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc": "2.0", "nonsense": [');
        return;
      }
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? this.streamable.get(id) : undefined;
      if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
        this.sessions++;
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => void this.streamable.set(sid, created),
        });
        created.onclose = () => {
          if (created.sessionId) this.streamable.delete(created.sessionId);
        };
        await this.build().connect(created);
        transport = created;
      }
      if (!transport) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32001, message: 'Session not found' },
            id: null,
          }),
        );
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    if (url.pathname === '/sse' && req.method === 'GET') {
      this.sessions++;
      const transport = new SSEServerTransport('/messages', res);
      this.sse.set(transport.sessionId, transport);
      res.on('close', () => this.sse.delete(transport.sessionId));
      await this.build().connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const transport = this.sse.get(url.searchParams.get('sessionId') ?? '');
      if (!transport) {
        res.writeHead(404).end('no such session');
        return;
      }
      await transport.handlePostMessage(req, res, body);
      return;
    }
    // What an SSE-only server answers the Streamable HTTP transport's POST: not here.
    res.writeHead(405).end('method not allowed');
  }
}

function addExtra(server: McpServer): void {
  server.registerTool('extra', { description: 'A tool added later.', inputSchema: {} }, () => ({
    content: [{ type: 'text', text: 'extra' }],
  }));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
