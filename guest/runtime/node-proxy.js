// SPDX-License-Identifier: Apache-2.0
// guest/runtime/node-proxy.js: Node's own HTTPS clients through the session's proxy.
//
// A session's only way out is the broker, reached through the proxy address in HTTPS_PROXY.
// Node's built-in fetch() and its https module ignore that variable, so bulkhead-init preloads
// this file in image sessions (NODE_OPTIONS=--require): both then open their connections as
// a CONNECT tunnel through the proxy and speak TLS inside it, trusting the session CA through
// NODE_EXTRA_CA_CERTS as any other connection would. Clients that honour HTTPS_PROXY
// themselves (npm, axios, ...) are unaffected. Plain http:// from these two clients is refused
// with a clear error: the broker serves plain HTTP only to clients that speak to it as a proxy.
'use strict';

const net = require('net');
const tls = require('tls');
const https = require('https');

const proxyEnv = process.env.HTTPS_PROXY || process.env.https_proxy;
const ANSWER_MAX = 16384;

// A raw socket to HOST:PORT through the proxy, or an error naming the proxy's answer.
function tunnel(proxy, host, port, done) {
	const s = net.connect(Number(proxy.port) || 3128, proxy.hostname);
	let answer = Buffer.alloc(0);
	const fail = (err) => {
		s.destroy();
		done(err);
	};
	s.once('error', fail);
	s.once('connect', () => {
		const target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
		s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
	});
	const onData = (chunk) => {
		answer = Buffer.concat([answer, chunk]);
		const end = answer.indexOf('\r\n\r\n');
		if (end < 0) {
			if (answer.length > ANSWER_MAX) fail(new Error('bulkhead proxy: answer too long'));
			return;
		}
		s.removeListener('data', onData);
		s.removeListener('error', fail);
		const line = answer.subarray(0, answer.indexOf('\r\n')).toString('latin1');
		if (!/^HTTP\/1\.[01] 200 /.test(line)) {
			fail(new Error(`bulkhead proxy refused ${host}:${port}: ${line}`));
			return;
		}
		if (end + 4 < answer.length) s.unshift(answer.subarray(end + 4));
		done(null, s);
	};
	s.on('data', onData);
}

// TLS to HOST inside a tunnel; done(err, tlsSocket) once the handshake is over.
function secureTunnel(proxy, host, port, servername, done) {
	tunnel(proxy, host, port, (err, raw) => {
		if (err) return done(err);
		const t = tls.connect({ socket: raw, servername: servername || host,
					ALPNProtocols: ['http/1.1'] });
		t.once('error', done);
		t.once('secureConnect', () => {
			t.removeListener('error', done);
			done(null, t);
		});
	});
}

function install(proxy) {
	// https.request and friends: a global agent whose connections are tunnels.
	class TunnelAgent extends https.Agent {
		createConnection(opts, done) {
			secureTunnel(proxy, opts.host || opts.hostname, opts.port || 443,
				     opts.servername, done);
		}
	}
	https.globalAgent = new TunnelAgent({ keepAlive: true });
	// A request that brings its own createConnection and no agent (ws, the WebSocket client,
	// does: tls.connect straight to the host) would leave Node with no proxy at all, and a
	// session has no other way out: it gets the tunnelling agent, which takes the place of
	// that connector (Node uses an agent's createConnection when a request names one).
	for (const name of ['request', 'get']) {
		const orig = https[name];
		https[name] = function (...args) {
			for (const a of args)
				if (a && typeof a === 'object' && !(a instanceof URL) &&
				    typeof a.createConnection === 'function' && a.agent === undefined)
					a.agent = https.globalAgent;
			return orig.apply(this, args);
		};
	}

	// fetch(): undici keeps its dispatcher under this symbol once loaded; a data: URL loads
	// it without a connection, and an Agent of its own class with a tunnelling connector
	// replaces the default.
	const key = Symbol.for('undici.globalDispatcher.1');
	if (typeof globalThis.fetch !== 'function') return;
	globalThis.fetch('data:,').catch(() => {});
	const current = globalThis[key];
	if (!current || typeof current.constructor !== 'function') return;
	globalThis[key] = new current.constructor({
		connect(opts, done) {
			if (opts.protocol !== 'https:') {
				done(new Error('bulkhead: fetch() leaves this guest over https:// only'));
				return;
			}
			secureTunnel(proxy, opts.hostname, Number(opts.port) || 443, opts.servername,
				     done);
		},
	});
}

if (proxyEnv) {
	try {
		install(new URL(proxyEnv));
	} catch (err) {
		process.emitWarning(`bulkhead: cannot route Node's HTTPS through ${proxyEnv}: ${err}`);
	}
}
