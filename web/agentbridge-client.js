// The agentbridge client module lives in static/ so that the bridge serves it
// at /agentbridge-client.js; this re-export lets Node code import it from
// web/agentbridge-client.js as well.
export * from './static/agentbridge-client.js';
