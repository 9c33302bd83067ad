package validate

import "github.com/agentbridge/agentbridge"

// The rules of one lifecycle event on its own (the bridge's vocabulary);
// the rules that need the session's state are the fold's (package fold).

// eventField is one field of the flat Event union: its JSON name, whether
// it is set in a typed event, and its value rule.
type eventField struct {
	name  string
	set   func(e *agentbridge.Event) bool
	check func(is []Issue, p, name string, e *agentbridge.Event) []Issue
}

func textField(name string, max int, get func(e *agentbridge.Event) string) eventField {
	return eventField{name,
		func(e *agentbridge.Event) bool { return get(e) != "" },
		func(is []Issue, p, name string, e *agentbridge.Event) []Issue {
			return checkText(is, p, name, get(e), max)
		}}
}

func idField(name string, get func(e *agentbridge.Event) string) eventField {
	return eventField{name,
		func(e *agentbridge.Event) bool { return get(e) != "" },
		func(is []Issue, p, name string, e *agentbridge.Event) []Issue { return checkID(is, p, name, get(e)) }}
}

func enumField(name string, set map[string]bool, names []string, get func(e *agentbridge.Event) string) eventField {
	return eventField{name,
		func(e *agentbridge.Event) bool { return get(e) != "" },
		func(is []Issue, p, name string, e *agentbridge.Event) []Issue {
			if !set[get(e)] {
				is = append(is, enumIssue(child(p, name), names...))
			}
			return is
		}}
}

// eventFields lists every field of Event except kind, in JSON order.
var eventFields = []eventField{
	{"occurredAt", func(e *agentbridge.Event) bool { return e.OccurredAt != 0 },
		func(is []Issue, p, name string, e *agentbridge.Event) []Issue {
			return checkRange(is, p, name, e.OccurredAt, 0, MaxEpochMillis)
		}},
	textField("title", MaxTitle, func(e *agentbridge.Event) string { return e.Title }),
	textField("model", MaxModel, func(e *agentbridge.Event) string { return e.Model }),
	{"cwd", func(e *agentbridge.Event) bool { return e.Cwd != "" },
		func(is []Issue, p, name string, e *agentbridge.Event) []Issue { return checkCwd(is, p, name, e.Cwd) }},
	{"pid", func(e *agentbridge.Event) bool { return e.PID != 0 },
		func(is []Issue, p, name string, e *agentbridge.Event) []Issue {
			return checkRange(is, p, name, int64(e.PID), 1, MaxPID)
		}},
	textField("promptText", MaxTitle, func(e *agentbridge.Event) string { return e.PromptText }),
	idField("agentId", func(e *agentbridge.Event) string { return e.AgentID }),
	idField("turnId", func(e *agentbridge.Event) string { return e.TurnID }),
	idField("toolId", func(e *agentbridge.Event) string { return e.ToolID }),
	textField("name", MaxText, func(e *agentbridge.Event) string { return e.Name }),
	enumField("outcome", outcomeSet, outcomeNames, func(e *agentbridge.Event) string { return string(e.Outcome) }),
	idField("waitId", func(e *agentbridge.Event) string { return e.WaitID }),
	enumField("state", waitStateSet, waitStateNames, func(e *agentbridge.Event) string { return string(e.State) }),
	textField("reason", MaxWaitingFor, func(e *agentbridge.Event) string { return e.Reason }),
	textField("summary", MaxError, func(e *agentbridge.Event) string { return e.Summary }),
	{"exitCode", func(e *agentbridge.Event) bool { return e.ExitCode != nil },
		func(is []Issue, p, name string, e *agentbridge.Event) []Issue {
			return checkRange(is, p, name, int64(*e.ExitCode), MinExitCode, MaxExitCode)
		}},
	textField("signal", MaxSignal, func(e *agentbridge.Event) string { return e.Signal }),
	idField("subagentId", func(e *agentbridge.Event) string { return e.SubagentID }),
	idField("parentAgentId", func(e *agentbridge.Event) string { return e.ParentAgentID }),
	textField("type", MaxSubagentType, func(e *agentbridge.Event) string { return e.Type }),
}

// Event checks one lifecycle event on its own: kind, required and allowed
// fields for the kind, ids, enums and text bounds. Rules that need the
// session's state (an open wait id, say) are Session.Apply's.
//
// A field that is set but does not belong to the event's kind is
// unknown_field; a required field that is not set is missing_field.
func Event(e agentbridge.Event) []Issue { return checkEvent(nil, "$", &e, nil) }

func checkEvent(is []Issue, p string, e *agentbridge.Event, pr *presence) []Issue {
	var allowed map[string]bool
	if pr.present("kind", e.Kind != "") {
		var ok bool
		if allowed, ok = eventKindAllowed[e.Kind]; !ok {
			is = append(is, enumIssue(child(p, "kind"), eventKindNames...))
		}
	} else if pr.absent("kind", e.Kind != "") {
		is = append(is, missing(p, "kind"))
	}
	for _, f := range eventFields {
		set := f.set(e)
		required, belongs := allowed[f.name]
		if pr.present(f.name, set) {
			if allowed != nil && !belongs {
				is = append(is, newIssue(child(p, f.name), UnknownField, "is not a field of a %s event", e.Kind))
				continue
			}
			is = f.check(is, p, f.name, e)
		} else if required && pr.absent(f.name, set) {
			is = append(is, newIssue(child(p, f.name), MissingField, "is required for a %s event", e.Kind))
		}
	}
	return is
}
