package remote

import (
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
)

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, event, data string
		take, ok          bool
	}{
		{"reset", "reset", `{"source":"codex","sessions":[{"id":"a","harness":"codex","status":"idle"}]}`, true, true},
		{"upsert", "upsert", `{"source":"codex","snapshot":{"id":"a","harness":"codex","status":"idle"}}`, true, true},
		{"a remote's remote", "upsert", `{"source":"codex","host":"nas","snapshot":{"id":"a","harness":"codex","status":"idle"}}`, false, true},
		{"harnesses are this bridge's", "harnesses", `{"source":"codex","enabledHarnesses":[]}`, false, true},
		{"a newer name", "activity", `{}`, false, true},
		{"remove", "remove", `{"source":"codex","sessionId":"a"}`, true, true},
		{"lifecycle", "lifecycle", `{"source":"codex","sessionId":"a","event":{"kind":"turn.started","turnId":"t"}}`, true, true},
		{"diagnostic", "diagnostic", `{"source":"codex","diagnostic":{"code":"x","message":"y"}}`, true, true},
		{"unknown snapshot field", "upsert", `{"source":"codex","snapshot":{"id":"a","harness":"codex","status":"idle","x":1}}`, false, false},
		{"bad source", "upsert", `{"source":"Codex","snapshot":{"id":"a","harness":"codex","status":"idle"}}`, false, false},
		{"no sessions", "reset", `{"source":"codex"}`, false, false},
		{"not json", "upsert", `nope`, false, false},
	} {
		rec, ok := decode(client.Event{ID: 1, Name: c.event, Data: json.RawMessage(c.data)})
		if ok != c.ok || (rec != nil) != c.take {
			t.Errorf("%s: decode = %v, %v; want taken %v, ok %v", c.name, rec, ok, c.take, c.ok)
		}
	}
}

// FuzzDecode: whatever a remote sends decodes to a record the hub takes,
// or is refused; never a panic. Taken records are applied to a hub.
func FuzzDecode(f *testing.F) {
	f.Add("upsert", []byte(`{"source":"codex","snapshot":{"id":"a","harness":"codex","status":"waiting","waitingFor":"x"}}`))
	f.Add("reset", []byte(`{"source":"codex","sessions":[{"id":"a","harness":"codex","status":"idle"},{"id":"a","harness":"codex","status":"idle"}]}`))
	f.Add("lifecycle", []byte(`{"source":"codex","sessionId":"a","event":{"kind":"agent.done","outcome":"success"}}`))
	f.Add("remove", []byte(`{"source":"codex","sessionId":"../x"}`))
	f.Add("diagnostic", []byte(`{"source":"codex","diagnostic":{"code":"x","message":"/home/u/secret"}}`))
	h := hub.New(hub.Options{})
	r, err := h.AddRemote("devbox")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		rec, _ := decode(client.Event{ID: 1, Name: name, Data: data})
		if rec != nil {
			r.Apply([]hub.RemoteRecord{*rec})
		}
	})
}
