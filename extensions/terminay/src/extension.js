// agentbridge for Terminay: one agent session source that shows what a local
// agentbridge reports. Terminay loads this module and calls activate.

import { readFileSync } from 'node:fs';
import { createBridgeSource } from './source.js';

export { createBridgeSource, MAX_RESET_SESSIONS } from './source.js';
export { Bridge, readToken, tokenFile, DEFAULT_ADDR } from './bridge.js';

/**
 * The host's session snapshot (a closed object; src/rules.js checks it).
 * @typedef {object} AgentSessionSnapshot
 * @property {string} id
 * @property {string} harness
 * @property {number} pid
 * @property {string} cwd
 * @property {string} [title]
 * @property {string} [model]
 * @property {'running' | 'waiting' | 'blocked' | 'idle'} [status]
 * @property {string} [waitingFor]
 * @property {string} [tool]
 * @property {'completed' | 'failed' | 'interrupted'} [lastTurn]
 * @property {number} [lastTurnEndedAt]
 * @property {string} [error]
 * @property {Array<{ id: string, parentId?: string, type: string, title?: string, status: 'running' | 'completed' | 'failed' | 'cancelled' }>} [subagents]
 */

/**
 * @typedef {{ code: string, message: string }} AgentSessionSourceDiagnostic
 * @typedef {{ dispose(): void }} Disposable
 */

/**
 * @typedef {object} AgentSessionPublisher
 * @property {(sessions: readonly AgentSessionSnapshot[]) => void} reset
 * @property {(session: AgentSessionSnapshot) => void} upsert
 * @property {(sessionId: string) => void} remove
 * @property {(diagnostic: AgentSessionSourceDiagnostic) => void} diagnostic
 */

/**
 * @typedef {object} AgentSessionSourceStart
 * @property {readonly string[]} enabledHarnesses
 * @property {AgentSessionPublisher} publisher
 * @property {AbortSignal} signal
 * @property {(listener: (enabledHarnesses: readonly string[]) => void) => Disposable} onEnabledHarnessesChanged
 */

/**
 * @typedef {object} AgentSessionSourceRuntime
 * @property {(start: AgentSessionSourceStart) => void | Promise<void>} start
 */

/** The package's Terminay manifest (the `terminay` key of package.json). */
export const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).terminay;

/** The one agentSessionSources contribution of the manifest. */
export const contribution = manifest.contributes.agentSessionSources[0];

/** The source id Terminay knows this source by. */
export const SOURCE_ID = contribution.id;

/**
 * Registers the source with Terminay.
 * @param {{ agents: { registerSessionSource(id: string, runtime: AgentSessionSourceRuntime): unknown } }} context
 */
export function activate(context) {
  const runtime = createBridgeSource({ harnesses: contribution.harnesses.map((/** @type {{ id: string }} */ h) => h.id) });
  return context.agents.registerSessionSource(SOURCE_ID, runtime);
}

/** What Terminay imports: the host takes the default export's activate. */
export default Object.freeze({ activate });
