package sources

import (
	"slices"

	"github.com/agentbridge/agentbridge/fold"
)

// Hooks is an agent's hook vocabulary, declared by its source package in
// its Registration (or Single): what each hook event name means to the
// fold, how its notifications are read, and where `agentbridge hooks
// install` writes its hooks. Package hooks decodes payloads with it and
// package hooks/install edits the agent's settings with it; neither holds
// a table per agent, so an agent with hooks is one source package and one
// line in sources/all.
//
// The type lives here, beside Registration, rather than in the root
// package (standard library only, it cannot name fold.HookKind) or in
// fold (the session model, which knows no payloads and no settings
// files): hooks and hooks/install look the vocabulary up in this registry
// anyway, and a source package imports this one already. Package sources
// must never import hooks, which imports it.
type Hooks struct {
	// Harness is the harness whose agent runs the hooks: one of the
	// source's Info.Harnesses (gemini-cli of the gemini source).
	Harness string
	// Events maps each hook event name the bridge takes to what it means;
	// an event mapped to fold.HookNone is taken but not installed (each
	// hook costs the agent a process). An event missing here is refused
	// (hooks.CodeUnknownEvent).
	Events map[string]fold.HookKind
	// Notify reads a Notification event's kind and reason (an ask, with
	// the reason shown, or fold.HookNone); nil: the agent's Notification,
	// if it has one, is no ask of its own.
	Notify func(HookNotification) (fold.HookKind, string)
	// File is the agent's hooks file, in its home (settings.json when
	// empty).
	File string
	// FeatureFlag: the agent runs hooks only with hooks = true under
	// [features] in its config.toml (Codex), which install sets.
	FeatureFlag bool
	// Comments: the agent reads comments in its settings file (JSON with
	// comments), so an edit keeps and allows them.
	Comments bool
	// Timeout is each handler's timeout in seconds; zero means the
	// installer's default (install.Timeout).
	Timeout int
	// Millis: the agent counts a handler's timeout in milliseconds.
	Millis bool
	// AnswerWait is how long an answering PermissionRequest hook waits for
	// an answer given through the bridge, in seconds (docs/answering.md);
	// zero: the agent's prompts cannot be answered through the bridge.
	AnswerWait int
}

// HookNotification is what a Notification payload says, as Hooks.Notify
// reads it: its notification_type, message and (Gemini CLI) details.
type HookNotification struct {
	Type    string
	Message string
	Details *HookDetails
}

// HookDetails is the part of a notification's details the bridge reads
// (Gemini CLI's serialized confirmation: type exec, edit, mcp, info). It
// is part of the payload every agent's hooks share: details of another
// shape refuse the payload, whatever the agent.
type HookDetails struct {
	Type            string `json:"type"`
	Title           string `json:"title"`
	Command         string `json:"command"`
	FilePath        string `json:"filePath"`
	FileName        string `json:"fileName"`
	ServerName      string `json:"serverName"`
	ToolDisplayName string `json:"toolDisplayName"`
}

// WithoutEvents returns a copy of h whose Events lack names (a fork's
// vocabulary derived from its parent's).
func (h Hooks) WithoutEvents(names ...string) Hooks {
	ev := make(map[string]fold.HookKind, len(h.Events))
	for name, k := range h.Events {
		if !slices.Contains(names, name) {
			ev[name] = k
		}
	}
	h.Events = ev
	return h
}

// HookRegistrations returns the registered sources that take hooks,
// sorted by id.
func HookRegistrations() []Registration {
	return slices.DeleteFunc(Registered(), func(r Registration) bool { return r.Hooks == nil })
}

// LookupHooks returns the hook vocabulary of source id (false: the source
// is not registered or takes no hooks).
func LookupHooks(id string) (*Hooks, bool) {
	r, ok := Lookup(id)
	return r.Hooks, ok && r.Hooks != nil
}

// HooksOfHarness returns the registration whose hooks harness runs (false:
// the harness has no hooks).
func HooksOfHarness(harness string) (Registration, bool) {
	for _, r := range HookRegistrations() {
		if r.Hooks.Harness == harness {
			return r, true
		}
	}
	return Registration{}, false
}
