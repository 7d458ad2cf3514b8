// SPDX-License-Identifier: Apache-2.0
// tests/node-clients/upstream.mjs: the host side of tests/e2e/test_stream_clients.sh, one HTTPS
// server on 127.0.0.1 that answers only requests carrying the session's token (so every answer
// proves the broker injected it):
//   /mcp                  an MCP server (the official SDK's McpServer, Streamable HTTP): tools
//                         `count` (a progress notification per step) and `notify` (a logging
//                         notification on the client's GET stream)
//   /v1/chat/completions  the OpenAI chat API's streamed answer (SSE chunks, then [DONE])
//   /api/generate         an NDJSON streamed answer (Ollama's format: a JSON object a line)
//   /ack?s=NAME&k=N       the client holds message N of stream NAME
//   /ws                   a WebSocket (ws): echoes; "say-token" is answered with the token
//                         (text and binary), "big" with 1 MiB; it records the client's close
// Each streamed message k+1 is sent only once the client has acknowledged message k (through
// the broker, like everything it sends), so a relay that held messages back shows as "late".
// Every message echoes the token too: the client must see it scrubbed. What happened goes to
// --state FILE as JSON. Usage: node upstream.mjs --cert PEM --key KEY --token-file F --state F
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { WebSocketServer } from 'ws';
import { z } from 'zod';

const arg = (name) => process.argv[process.argv.indexOf(`--${name}`) + 1];
const token = readFileSync(arg('token-file'), 'utf8').trim();
const ACK_WAIT_MS = 4000;
const state = { authorised: 0, refused: 0, late: {}, sent: {}, get_stream: 'not sent',
	ws: { messages: 0, close: null, extensions: null } };
const save = () => writeFileSync(arg('state'), JSON.stringify(state));
const acks = new Map(); // "name/k" -> resolve, or true once acknowledged

function waitAck(name, k) {
	const key = `${name}/${k}`;
	if (acks.get(key) === true) return Promise.resolve(true);
	return new Promise((resolve) => {
		const t = setTimeout(() => resolve(false), ACK_WAIT_MS);
		acks.set(key, () => { clearTimeout(t); resolve(true); });
	});
}
function ack(name, k) {
	const key = `${name}/${k}`, w = acks.get(key);
	acks.set(key, true);
	if (typeof w === 'function') w();
}
// Sends message k of stream NAME with SEND, then waits for its acknowledgement.
async function lockstep(name, k, last, send) {
	state.sent[name] = k;
	save();
	await send();
	if (!last && !(await waitAck(name, k))) {
		(state.late[name] ||= []).push(k);
		save();
	}
}

// --- MCP -------------------------------------------------------------------------------------
const mcp = new McpServer({ name: 'bulkhead-test', version: '1.0.0' }, { capabilities: { logging: {} } });
let transport;
mcp.registerTool('count', { description: 'counts to n, reporting progress',
	inputSchema: { n: z.number().int().min(1).max(20) } }, async ({ n }, extra) => {
	const progressToken = extra._meta?.progressToken;
	for (let i = 1; i <= n; i++)
		await lockstep('progress', i, i === n, () => extra.sendNotification({
			method: 'notifications/progress',
			params: { progressToken, progress: i, total: n, message: `step ${i} key=${token}` },
		}));
	return { content: [{ type: 'text', text: `counted to ${n}, key=${token}` }] };
});
mcp.registerTool('notify', { description: 'a logging notification on the GET stream' }, async () => {
	const open = () => transport?._webStandardTransport?._streamMapping?.get('_GET_stream');
	for (let i = 0; i < 100 && !open(); i++) await new Promise((r) => setTimeout(r, 50));
	if (!open()) return { content: [{ type: 'text', text: 'no GET stream open' }] };
	await mcp.server.notification({ method: 'notifications/message',
		params: { level: 'info', data: `on the GET stream, key=${token}` } });
	state.get_stream = (await waitAck('get', 1)) ? 'acknowledged' : 'late';
	save();
	return { content: [{ type: 'text', text: `notified: ${state.get_stream}` }] };
});

// --- the OpenAI chat API's streamed answer -----------------------------------------------------
async function chat(req, res, body) {
	const words = ['Hello', ' from', ' a', ' streamed', ` answer; key=${token}`];
	const chunk = (delta, finish) => `data: ${JSON.stringify({ id: 'chatcmpl-1',
		object: 'chat.completion.chunk', created: 1700000000, model: body.model,
		choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
	res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
	for (let k = 0; k < words.length; k++)
		await lockstep('chat', k, false, () => new Promise((r) =>
			res.write(chunk(k ? { content: words[k] } : { role: 'assistant', content: words[k] }, null), r)));
	res.write(chunk({}, 'stop'));
	res.end('data: [DONE]\n\n');
}

async function generate(req, res) {
	const words = ['Streamed', ' line', ' by', ` line; key=${token}`];
	res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
	for (let k = 0; k < words.length; k++)
		await lockstep('ndjson', k, false, () => new Promise((r) =>
			res.write(`${JSON.stringify({ model: 'test', response: words[k], done: false })}\n`, r)));
	res.end(`${JSON.stringify({ model: 'test', response: '', done: true })}\n`);
}

const server = createServer({ cert: readFileSync(arg('cert')), key: readFileSync(arg('key')) },
	async (req, res) => {
		if (req.headers.authorization !== `Bearer ${token}`) {
			state.refused++;
			save();
			res.writeHead(401).end('no token\n');
			return;
		}
		state.authorised++;
		const url = new URL(req.url, 'https://localhost');
		let body = '';
		for await (const c of req) body += c;
		const json = body ? JSON.parse(body) : undefined;
		if (url.pathname === '/ack') {
			ack(url.searchParams.get('s'), Number(url.searchParams.get('k')));
			res.writeHead(204).end();
		} else if (url.pathname === '/v1/chat/completions' && json?.stream) {
			await chat(req, res, json);
		} else if (url.pathname === '/api/generate') {
			await generate(req, res);
		} else if (url.pathname === '/mcp') {
			if (!transport) {
				transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
				await mcp.connect(transport);
			}
			await transport.handleRequest(req, res, json);
		} else {
			res.writeHead(404).end();
		}
	});
// --- WebSockets ------------------------------------------------------------------------------
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: true });
server.on('upgrade', (req, socket, head) => {
	if (req.headers.authorization !== `Bearer ${token}` || !req.url.startsWith('/ws')) {
		state.refused++;
		save();
		socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n');
		return;
	}
	state.authorised++;
	wss.handleUpgrade(req, socket, head, (ws) => {
		state.ws.extensions = ws.extensions;
		save();
		ws.on('message', (data, binary) => {
			state.ws.messages++;
			const text = binary ? null : data.toString();
			if (text === 'say-token') {
				ws.send(`token=${token}`);
				ws.send(Buffer.from(`bin:${token}`), { binary: true });
			} else if (text === 'big') {
				ws.send('y'.repeat(1 << 20));
			} else {
				ws.send(data, { binary });
			}
		});
		ws.on('close', (code, reason) => {
			state.ws.close = [code, reason.toString()];
			save();
		});
	});
});
server.listen(0, '127.0.0.1', () => {
	save();
	console.log(server.address().port);
});
