package install

import (
	"errors"
	"fmt"

	"github.com/tailscale/hujson"
)

// forHandlers calls fn for every handler object of every event of a
// hooks document ({"hooks": {"Event": [{"matcher"?, "hooks": [handler…]}]}}),
// with the handler list it is in and its index there.
func forHandlers(d *doc, fn func(event string, list *hujson.Array, i int, handler *hujson.Object)) {
	hs := asObject(member(d.obj(), "hooks"))
	if hs == nil {
		return
	}
	for _, m := range hs.Members {
		groups := asArray(&m.Value)
		if groups == nil {
			continue
		}
		ev := asString(&m.Name)
		for gi := range groups.Elements {
			list := asArray(member(asObject(&groups.Elements[gi]), "hooks"))
			if list == nil {
				continue
			}
			for i := range list.Elements {
				if h := asObject(&list.Elements[i]); h != nil {
					fn(ev, list, i, h)
				}
			}
		}
	}
}

// handler is the handler install adds.
type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

type group struct {
	Hooks []handler `json:"hooks"`
}

// plainHandler is the handler of every event without answering.
func plainHandler(command string, timeout int) func(string) handler {
	return func(string) handler { return handler{Type: "command", Command: command, Timeout: timeout} }
}

// addHandlers makes sure every event has one handler, the one handlerFor
// gives:
// an existing one of ours gets the command (another binary path) and the
// timeout (an older install wrote another), else a group with one handler
// is appended. A user's own handlers are never touched.
func addHandlers(d *doc, source string, events []string, handlerFor func(event string) handler) error {
	root := d.rootLayout()
	hv := member(d.obj(), "hooks")
	if hv == nil {
		hv = addMember(d.obj(), root, layout{}, "hooks", map[string]any{})
	}
	hs := asObject(hv)
	if hs == nil {
		return errors.New(`"hooks" is not an object`)
	}
	hl := d.objLayout(hs, root)
	for _, ev := range events {
		want := handlerFor(ev)
		command, timeout := want.Command, want.Timeout
		gv := member(hs, ev)
		if gv == nil {
			addMember(hs, hl, root, ev, []group{{Hooks: []handler{want}}})
			continue
		}
		groups := asArray(gv)
		if groups == nil {
			return fmt.Errorf("hooks.%s is not a list", ev)
		}
		have := false
		for gi := range groups.Elements {
			list := asArray(member(asObject(&groups.Elements[gi]), "hooks"))
			if list == nil {
				continue
			}
			for i := range list.Elements {
				h := asObject(&list.Elements[i])
				c := member(h, "command")
				if _, ok := ours(asString(c), source); !ok || have {
					continue
				}
				have = true
				if asString(c) != command {
					setLiteral(c, command)
				}
				if tv := member(h, "timeout"); tv == nil {
					addMember(h, d.objLayout(h, hl), hl, "timeout", timeout)
				} else if lit, ok := tv.Value.(hujson.Literal); !ok || lit.Kind() != '0' || lit.Int() != int64(timeout) {
					setLiteral(tv, timeout)
				}
			}
		}
		if !have {
			addElement(groups, d.arrLayout(groups, hl), hl, group{Hooks: []handler{want}})
		}
	}
	return nil
}

// removeHandlers removes every handler of ours, the groups it leaves
// without handlers, the event lists it leaves empty and the hooks object
// when nothing is left in it.
func removeHandlers(d *doc, source string) {
	hs := asObject(member(d.obj(), "hooks"))
	if hs == nil {
		return
	}
	removed := false
	for mi := len(hs.Members) - 1; mi >= 0; mi-- {
		groups := asArray(&hs.Members[mi].Value)
		if groups == nil {
			continue
		}
		touched := false
		for gi := len(groups.Elements) - 1; gi >= 0; gi-- {
			list := asArray(member(asObject(&groups.Elements[gi]), "hooks"))
			if list == nil {
				continue
			}
			n := len(list.Elements)
			for i := n - 1; i >= 0; i-- {
				if _, ok := ours(asString(member(asObject(&list.Elements[i]), "command")), source); ok {
					removeElement(list, i)
				}
			}
			if len(list.Elements) < n {
				touched = true
				if len(list.Elements) == 0 {
					removeElement(groups, gi)
				}
			}
		}
		if touched {
			removed = true
			if len(groups.Elements) == 0 {
				removeMember(hs, mi)
			}
		}
	}
	if removed && len(hs.Members) == 0 {
		o := d.obj()
		for i := range o.Members {
			if asString(&o.Members[i].Name) == "hooks" {
				removeMember(o, i)
				break
			}
		}
	}
}
