package sources_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testlog"
	"github.com/agentbridge/agentbridge/sources/example"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/text"
)

// journalSecrets are credentials as an agent's journal would carry them in
// display text, with the part that must not come out.
var journalSecrets = []struct{ name, text, secret string }{
	{"anthropic key", "set ANTHROPIC_API_KEY=sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz_Xc-Vb9Nm8Qw7Er6Ty5-AA", "Zx9Qw8Er7Ty6Ui5Op4As3"},
	{"openai key", "try sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12", "Ab12Cd34Ef56Gh78Ij90"},
	{"github token", "push with ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s", "R4nd0mT0k3nV4lu3F0rT3st"},
	{"aws key id", "AKIAZ7Q3EXAMPLE4KEY9 is the key", "AKIAZ7Q3EXAMPLE4KEY9"},
	{"slack token", "post via xoxb-2048163264-1357911131517-Zq8Wx7Ec6Rv5Tb4Yn3Um2Ik1", "Zq8Wx7Ec6Rv5Tb4Yn3Um2"},
	{"bearer", "Authorization: Bearer 9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a", "9d8c7b6a5f4e3d2c1b0a9f8e"},
	{"private key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0B"},
	{"password pair", "login with password=Tr0ub4dor-and-3-horses", "Tr0ub4dor-and-3-horses"},
	{"token pair", "token=7f3a9c2e5b8d1f4a6c9e2b5d8f1a4c7e", "7f3a9c2e5b8d1f4a6c9e2b5d"},
}

// TestJournalRedaction writes each credential into every display
// field of an example journal (session title, prompt, tool name, approval
// reason, summary, subagent title and type) and checks that no event,
// snapshot, diagnostic or debug log line of the source carries it.
func TestJournalRedaction(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	dir := example.SessionsDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	var want []string
	for i, s := range journalSecrets {
		q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
		lines := []string{
			`{"type":"session","ts":"` + ts + `","title":` + q(s.text) + `,"model":"m","cwd":"/work/x"}`,
			`{"type":"prompt","ts":"` + ts + `","turnId":"t-1","text":` + q(s.text) + `}`,
			`{"type":"tool_started","ts":"` + ts + `","toolId":"c-1","name":` + q(s.text) + `}`,
			`{"type":"subagent_started","ts":"` + ts + `","subagentId":"a-1","parentId":"root","title":` + q(s.text) + `,"agentType":` + q(s.text) + `}`,
			`{"type":"approval_needed","ts":"` + ts + `","requestId":"r-1","reason":` + q(s.text) + `}`,
		}
		if i%2 == 1 {
			lines = append(lines, `{"type":"approval_resolved","ts":"`+ts+`","requestId":"r-1"}`,
				`{"type":"complete","ts":"`+ts+`","ok":false,"summary":`+q(s.text)+`}`)
		}
		id := "leak-" + string(rune('a'+i))
		want = append(want, id)
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var log testlog.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := runExampleWith(t, example.Config{Home: home, Window: -1, Logger: logger})
	h.WaitFor(t, "every session with its waiting reason", func(h *sourcestest.Hub) bool {
		if len(sessionIDs(h)) != len(want) {
			return false
		}
		for _, s := range h.Snapshots() {
			if s.Title == "" {
				return false
			}
		}
		return true
	})
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.Encode(h.Snapshots())
	enc.Encode(h.Calls())
	enc.Encode(h.Diagnostics())
	if !strings.Contains(out.String(), text.Redacted) {
		t.Fatalf("no %s in the output: the journals were not read", text.Redacted)
	}
	logText := log.String()
	for _, s := range journalSecrets {
		for where, text := range map[string]string{"events, snapshots and diagnostics": out.String(), "debug log": logText} {
			if i := strings.Index(text, s.secret); i >= 0 {
				t.Errorf("%s: the %s carry the secret: …%s…", s.name, where, text[max(0, i-60):min(len(text), i+60)])
			}
		}
	}
}
