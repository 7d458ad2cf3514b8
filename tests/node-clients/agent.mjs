// SPDX-License-Identifier: Apache-2.0
// tests/node-clients/agent.mjs: what an agent in a session does all day, with the clients users
// run, unchanged: the openai client streams a chat completion, the official MCP SDK's client
// lists and calls tools over Streamable HTTP (progress notifications, a notification on its
// GET stream). It holds no token: the broker injects one. Every message it receives it
// acknowledges at once (tests/node-clients/upstream.mjs sends the next only then), and it
// prints what it saw. Usage: node agent.mjs https://HOST:PORT
import OpenAI from 'openai';
import WebSocket from 'ws';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const base = process.argv[2];
const ack = async (s, k) => {
	const r = await fetch(`${base}/ack?s=${s}&k=${k}`);
	if (r.status !== 204) throw new Error(`ack ${s}/${k}: ${r.status}`);
};

// The openai client: each delta as it is produced.
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'not-a-secret', maxRetries: 0 });
const stream = await openai.chat.completions.create({ model: 'test-model', stream: true,
	messages: [{ role: 'user', content: 'hello' }] });
let k = 0, text = '';
for await (const chunk of stream) {
	const d = chunk.choices[0]?.delta?.content;
	if (d === undefined) continue;
	text += d;
	await ack('chat', k++);
}
console.log(`openai deltas=${k} text=${JSON.stringify(text)}`);

// MCP over Streamable HTTP.
const client = new Client({ name: 'bulkhead-agent', version: '1.0.0' });
const logged = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
	logged.push(n.params.data);
	await ack('get', 1);
});
await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
const { tools } = await client.listTools();
console.log(`mcp tools=${tools.map((t) => t.name).sort().join(',')}`);
const progress = [];
const counted = await client.callTool({ name: 'count', arguments: { n: 3 } }, undefined, {
	onprogress: (p) => { progress.push(p.message); ack('progress', p.progress).catch(console.error); },
});
console.log(`mcp count progress=${JSON.stringify(progress)} result=${JSON.stringify(counted.content[0].text)}`);
const notified = await client.callTool({ name: 'notify', arguments: {} });
console.log(`mcp notify result=${JSON.stringify(notified.content[0].text)} logged=${JSON.stringify(logged)}`);
await client.close();

// WebSockets with ws, unchanged: echo, a large message each way, the token scrubbed, a close.
const wsOut = await new Promise((resolve, reject) => {
	const sock = new WebSocket(`${base.replace('https:', 'wss:')}/ws`);
	const got = [];
	const big = 'z'.repeat(3 << 20);
	sock.on('error', reject);
	sock.on('open', () => sock.send('echo-me'));
	sock.on('message', (data, binary) => {
		got.push(data.length > 64 ? `${binary ? 'bin' : 'text'}:${data.length}`
			: binary ? `hex:${data.toString('hex')}` : data.toString());
		if (got.length === 1) sock.send(Buffer.from([0, 1, 2, 255]));
		else if (got.length === 2) sock.send('say-token');
		else if (got.length === 4) sock.send(big);
		else if (got.length === 5) sock.send('big');
		else if (got.length === 6) sock.close(4001, 'agent done');
	});
	sock.on('close', (code) => resolve({ got, code }));
});
console.log(`ws got=${JSON.stringify(wsOut.got)} close=${wsOut.code}`);
