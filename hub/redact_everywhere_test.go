package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// leak is a realistic credential inside display text and the part of it
// that must never come out of the hub.
type leak struct {
	name, text, secret string
}

// leaks are the credential shapes of docs/contract.md section 6 and docs/reliability.md, as they
// show up in prompts, titles and error messages.
var leaks = []leak{
	{"anthropic key", "export ANTHROPIC_API_KEY=sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz_Xc-Vb9Nm8Qw7Er6Ty5Ui4Op3As2Df1-AA and run", "Zx9Qw8Er7Ty6Ui5Op4As3"},
	{"anthropic admin key", "key sk-ant-admin01-Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9Pp0_AaSsDdFfGgHh here", "Qq1Ww2Ee3Rr4Tt5Yy6Uu7"},
	{"openai project key", "OPENAI_API_KEY=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12", "Ab12Cd34Ef56Gh78Ij90"},
	{"openai legacy key", "use sk-9f8e7d6c5b4a39281706f5e4d3c2b1a0ZYXWVUTSRQPONMLK for it", "9f8e7d6c5b4a39281706"},
	{"github classic pat", "git clone https://ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s@github.com/acme/app", "R4nd0mT0k3nV4lu3F0rT3st"},
	{"github fine-grained pat", "GH_TOKEN=github_pat_11AAAAAAA0bbbbbbbbbbbb_cccccccccccccccccccccccccccccccccccccccccccccccccccccccccc gh pr list", "0bbbbbbbbbbbb_cccccccc"},
	{"github app token", "ghs_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8 expired", "Q1w2E3r4T5y6U7i8O9p0"},
	{"aws access key id", "aws_access_key_id = AKIAZ7Q3EXAMPLE4KEY9", "AKIAZ7Q3EXAMPLE4KEY9"},
	{"aws secret key", "aws_secret_access_key = kW7pZ2sN9vQ4xL8mR3tY6uB1cE5gH0jA/dF+oIlK", "kW7pZ2sN9vQ4xL8mR3tY"},
	{"slack bot token", "SLACK_BOT_TOKEN=xoxb-2048163264-1357911131517-Zq8Wx7Ec6Rv5Tb4Yn3Um2Ik1", "Zq8Wx7Ec6Rv5Tb4Yn3Um2"},
	{"slack user token", "xoxp-1111222233-4444555566-7777888899-abcdefabcdefabcdefabcdefabcdef12 in the log", "abcdefabcdefabcdefabcdef"},
	{"bearer header", "curl -H 'Authorization: Bearer 9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a' https://api.internal", "9d8c7b6a5f4e3d2c1b0a9f8e"},
	{"jwt bearer", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.c2lnbmF0dXJlLXNlY3JldC12YWx1ZQ", "c2lnbmF0dXJlLXNlY3JldC12"},
	{"private key block", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5v"},
	{"rsa key block, cut", "paste: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", "MIIEowIBAAKCAQEAu1SU1LfV"},
	{"password pair", "mysql -u root --password=Tr0ub4dor-and-3-horses db", "Tr0ub4dor-and-3-horses"},
	{"password colon", `config: {"password": "c0rrect-h0rse-battery"}`, "c0rrect-h0rse-battery"},
	{"token pair", "retry with token=7f3a9c2e5b8d1f4a6c9e2b5d8f1a4c7e", "7f3a9c2e5b8d1f4a6c9e2b5d"},
	{"secret pair", "CLIENT_SECRET=qH7mN2pL9vX4zK8wR3tB6yC1", "qH7mN2pL9vX4zK8wR3tB6yC1"},
	{"url credentials", "psql postgres://app:Sup3rS3cretPassw0rd@db.internal:5432/orders", "Sup3rS3cretPassw0rd"},
}

// vaultHub is a hub with one push source ("vault", harness "vault-agent")
// and a debug log.
func vaultHub(t *testing.T) (*hub.Hub, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	h := hub.New(hub.Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "vault", DisplayName: "Vault", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "vault-agent", DisplayName: "Vault Agent"}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, &log
}

// fit bounds s to n characters, so the operation stays valid and the test
// checks redaction rather than a rejection.
func fit(s string, n int) string { return text.Bound(s, n) }

// TestRedactionEverywhere publishes each credential in every
// display text (snapshot title, model, waitingFor, subagent type and
// title; event title, prompt text, reason, summary, name; diagnostic
// message), through the publish operations, and checks that neither
// GET-style reads, stream records (initial and live), diagnostics nor the
// debug log carry the secret.
func TestRedactionEverywhere(t *testing.T) {
	t.Parallel()
	for _, lk := range leaks {
		t.Run(lk.name, func(t *testing.T) {
			t.Parallel()
			h, log := vaultHub(t)
			sub := h.Subscribe(0, false, agentbridge.Filter{})
			defer sub.Close()
			sample := func(n int) string { return fit(lk.text, n) }
			snap := agentbridge.Snapshot{ID: "s-1", Harness: "vault-agent", Status: agentbridge.StatusWaiting,
				Title: sample(validate.MaxTitle), Model: sample(validate.MaxModel), WaitingFor: sample(validate.MaxWaitingFor),
				Subagents: []agentbridge.Subagent{{ID: "a-1", Type: sample(validate.MaxSubagentType), Title: sample(validate.MaxTitle), Status: agentbridge.SubagentRunning}}}
			ops := [][]agentbridge.Op{
				{{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{snap}}},
				{{Op: agentbridge.OpUpsert, Session: snap}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Harness: "vault-agent", Event: agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: sample(validate.MaxTitle)}}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Event: agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: sample(validate.MaxTitle), Model: sample(validate.MaxModel)}}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t-1", PromptText: sample(validate.MaxText)}}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Event: agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "c-1", Name: sample(validate.MaxText)}}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Event: agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w-1", State: agentbridge.StatusWaiting, Reason: sample(validate.MaxText)}}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Event: agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "a-2", ParentAgentID: "root", Title: sample(validate.MaxTitle)}}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Event: agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: "a-2", Outcome: "error", Summary: sample(validate.MaxText)}}},
				{{Op: agentbridge.OpDiagnostic, Diagnostic: agentbridge.Diagnostic{Code: "agent-error", Message: sample(validate.MaxDiagnosticText)}}},
				{{Op: agentbridge.OpEvent, SessionID: "s-2", Event: agentbridge.Event{Kind: agentbridge.KindSessionStopped, Reason: sample(validate.MaxText)}}},
			}
			for i, op := range ops {
				if err := h.Publish("vault", op); err != nil {
					t.Fatalf("op %d (%s): %v", i, op[0].Op, err)
				}
			}
			var out bytes.Buffer
			_, entries := h.Sessions(agentbridge.Filter{})
			json.NewEncoder(&out).Encode(entries)
			json.NewEncoder(&out).Encode(h.Diagnostics())
			for _, rec := range sub.Initial {
				out.Write(rec.Data)
			}
			live := 0
		drain:
			for {
				select {
				case rec := <-sub.C:
					out.Write(rec.Data)
					live++
				default:
					break drain
				}
			}
			later := h.Subscribe(0, false, agentbridge.Filter{}) // a new client's resets
			for _, rec := range later.Initial {
				out.Write(rec.Data)
			}
			later.Close()
			if live < len(ops) {
				t.Fatalf("%d live records for %d operations", live, len(ops))
			}
			if !strings.Contains(out.String(), text.Redacted) {
				t.Errorf("no %q anywhere: the samples did not reach the output", text.Redacted)
			}
			for where, s := range map[string]string{"reads and records": out.String(), "log": log.String()} {
				if strings.Contains(s, lk.secret) {
					i := strings.Index(s, lk.secret)
					t.Errorf("%s carry the secret: …%s…", where, s[max(0, i-60):min(len(s), i+60)])
				}
			}
		})
	}
}

// TestRedactionOfRejectedInput: an operation the hub refuses must
// not echo the credential in its issues either.
func TestRedactionOfRejectedInput(t *testing.T) {
	t.Parallel()
	h, log := vaultHub(t)
	for _, lk := range leaks {
		bad := agentbridge.Snapshot{ID: "s-1", Harness: "vault-agent", Status: "sleeping", Title: strings.Repeat(lk.text+" ", 20)}
		err := h.Publish("vault", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: bad}})
		if err == nil {
			t.Fatalf("%s: an invalid snapshot was accepted", lk.name)
		}
		if s := fmt.Sprintf("%v %+v", err, err); strings.Contains(s, lk.secret) {
			t.Errorf("%s: the rejection carries the secret: %s", lk.name, s)
		}
	}
	if strings.Contains(log.String(), "sk-") || strings.Contains(log.String(), "PRIVATE KEY-----\nb3") {
		t.Errorf("the log carries rejected input:\n%s", log)
	}
}
