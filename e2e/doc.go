// Package e2e holds the end-to-end tests that drive the dashboard in a real
// headless Chromium against a real agentbridge process. It has no code of
// its own; see browser_test.go. The History view's test
// (history_browser_test.go) serves the dashboard with a fake bridge
// instead. TestHistoryReplayMatchesJournalsAcrossKill (history_test.go)
// needs no browser: it replays recorded journals of several agents through
// real bridges, one killed midway, and checks their history against the
// journals' own sums. The browser tests skip when Chromium is missing, unless the environment
// variable CI is set, where that is a failure. Screenshots go to
// artifacts/ at the repository root.
package e2e
