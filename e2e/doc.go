// Package e2e holds the end-to-end tests that drive the dashboard in a real
// headless Chromium against a real agentbridge process. It has no code of
// its own; see browser_test.go. TestHistoryView (history_browser_test.go)
// serves the dashboard with a fake bridge instead.
// TestHistoryReplayMatchesJournalsAcrossKill (history_test.go) needs no
// browser: it replays recorded journals of several agents through real
// bridges, one killed midway, and checks their history against the
// journals' own sums; TestHistoryViewOfReplay
// (history_replay_browser_test.go) opens the History view on such a bridge
// and checks its charts against the bridge's history. The browser tests
// skip when Chromium is missing, unless the environment variable CI is set,
// where that is a failure. Screenshots go to artifacts/ at the repository
// root.
package e2e
