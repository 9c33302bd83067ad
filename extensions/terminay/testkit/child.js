// Test helper: the extension child process of the host model (host.js,
// ForkedExtension), after packages/server-core/src/extensions/child.ts:
// it imports the entrypoint, takes the default export's activate (else a
// named activate, else a default function), gives it a context whose
// registerSessionSource refuses undeclared, duplicate or start-less
// registrations, and runs the source's publisher (ChildSource) against the
// host over IPC.

import { pathToFileURL } from 'node:url';
import { ChildSource } from './host.js';

/** @type {Map<string, { runtime: { start(s: unknown): unknown }, child: ChildSource }>} */
const sources = new Map();
/** @type {Map<string, (ack: any) => void>} */
const acks = new Map();
let sequence = 0;

/** @param {Record<string, unknown>} frame */
function send(frame) {
  process.send?.({ protocolVersion: 1, ...frame });
}

/** @param {string} id @param {unknown} err */
function failure(id, err) {
  send({ kind: 'failure', id, payload: { message: err instanceof Error ? err.message : String(err) } });
}

/** @param {string} sourceId */
function childFor(sourceId) {
  return new ChildSource({
    send: (payload) =>
      new Promise((resolve) => {
        const id = `agent:${++sequence}`;
        acks.set(id, resolve);
        send({ kind: 'agent.source.publish', id, payload: { sourceId, ...payload } });
      }),
    diagnostic: (diagnostic) => send({ kind: 'agent.source.diagnostic', id: `agent-diagnostic:${++sequence}`, payload: { sourceId, diagnostic } }),
    refused: (v) => send({ kind: 'frame.refused', id: `refused:${++sequence}`, payload: v }),
  });
}

/** @param {any} m */
async function receive(m) {
  const p = m?.payload ?? {};
  try {
    switch (m?.kind) {
      case 'agent.source.ack': {
        const r = acks.get(m.id);
        acks.delete(m.id);
        r?.(p);
        return;
      }
      case 'activate': {
        const imported = await import(pathToFileURL(p.entrypoint).href);
        const ext = imported.default && typeof imported.default === 'object' ? imported.default : undefined;
        const activate = ext?.activate ?? imported.activate ?? imported.default;
        if (typeof activate !== 'function') throw new Error('extension must export activate(context)');
        const declared = new Set((p.agentSessionSources ?? []).map((/** @type {any} */ s) => s.id));
        await activate(
          Object.freeze({
            extensionId: p.extensionId,
            apiVersion: '3.1.0',
            agents: Object.freeze({
              /** @param {string} sourceId @param {any} runtime */
              registerSessionSource(sourceId, runtime) {
                if (typeof sourceId !== 'string' || !declared.has(sourceId) || sources.has(sourceId) || typeof runtime?.start !== 'function') {
                  throw new Error('session source registration is undeclared or invalid');
                }
                sources.set(sourceId, { runtime, child: childFor(sourceId) });
                return Object.freeze({ sourceId, dispose() {} });
              },
            }),
          }),
        );
        send({ kind: 'ready', id: m.id, payload: { agentSessionSources: [...sources.keys()] } });
        return;
      }
      case 'agent.source.start': {
        const s = sources.get(p.sourceId);
        if (!s) throw new Error('session source is not registered');
        await s.child.start(s.runtime, p.enabledHarnesses ?? []);
        send({ kind: 'result', id: m.id });
        return;
      }
      case 'agent.source.harnesses': {
        const s = sources.get(p.sourceId);
        if (!s) throw new Error('session source is not registered');
        s.child.setHarnesses(p.enabledHarnesses ?? []);
        send({ kind: 'result', id: m.id });
        return;
      }
      case 'env':
        // For the test: what this process's environment holds.
        send({ kind: 'result', id: m.id, payload: { value: process.env[p.name] ?? null, names: Object.keys(process.env).sort() } });
        return;
      default:
    }
  } catch (err) {
    failure(m?.id, err);
  }
}

process.on('message', (m) => void receive(m));
process.on('disconnect', () => process.exit(0));
