package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c *config)
	}{
		{name: "defaults", check: func(t *testing.T, c *config) {
			if c.Old != 2000 || c.Recent != 20 || c.Idle != 30*time.Second || c.RSSSessions != 1000 || c.RSSClients != 100 {
				t.Errorf("defaults: %+v", c)
			}
			if len(c.Clients) != 3 || c.Clients[2] != 1000 || len(c.Phases) != len(allPhases) {
				t.Errorf("defaults: clients %v phases %v", c.Clients, c.Phases)
			}
		}},
		{name: "quick shrinks what was not set", args: []string{"-quick", "-old", "50"}, check: func(t *testing.T, c *config) {
			if c.Old != 50 || c.Recent != 10 || c.Idle != 5*time.Second || c.Repeat != 1 || len(c.Clients) != 2 {
				t.Errorf("quick: %+v", c)
			}
		}},
		{name: "phases", args: []string{"-phases", "cold,rss"}, check: func(t *testing.T, c *config) {
			if strings.Join(c.Phases, ",") != "cold,rss" {
				t.Errorf("phases %v", c.Phases)
			}
		}},
		{name: "unknown phase", args: []string{"-phases", "cold,warp"}, wantErr: `unknown phase "warp"`},
		{name: "bad clients", args: []string{"-clients", "1,x"}, wantErr: `"x" is not a positive count`},
		{name: "no recent journals", args: []string{"-recent", "0"}, wantErr: "-recent ≥ 1"},
		{name: "zero idle", args: []string{"-idle", "0s"}, wantErr: "must be positive"},
		{name: "stray argument", args: []string{"now"}, wantErr: `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestRenderRewritesIDs(t *testing.T) {
	for _, kind := range []string{kindClaude, kindCodex} {
		ts, err := loadTemplates(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range ts {
			id := sessionUUID(kind, 7)
			out := tp.render(nil, id, 0, false)
			if bytes.Contains(out, []byte(tp.session)) || !bytes.Contains(out, []byte(id)) {
				t.Errorf("%s/%s: the session id was not replaced", kind, tp.name)
			}
			if len(out) < tp.size-len(tp.session) {
				t.Errorf("%s/%s: rendered %d bytes of %d", kind, tp.name, len(out), tp.size)
			}
			rep := tp.render(nil, id, 3, true)
			for _, m := range idRe.FindAll(rep, -1) {
				if s := string(m); s != id && !bytes.Contains(rep, []byte(s+"-r3")) {
					t.Errorf("%s/%s: id %s kept as is in a repeated body", kind, tp.name, s)
					break
				}
			}
			if kind == kindCodex && bytes.Contains(rep, []byte(`"type":"session_meta"`)) {
				t.Errorf("%s/%s: a repeated body keeps its session_meta", kind, tp.name)
			}
		}
	}
}

func TestGenerateRefusesTooMuch(t *testing.T) {
	if _, err := generate(t.TempDir(), 1000, 10, 1<<20); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("err = %v, want the size limit", err)
	}
}

// TestGeneratedJournalsBecomeSessions runs the real sources over a small
// generated corpus: every recent journal is a session, no old one is.
func TestGeneratedJournalsBecomeSessions(t *testing.T) {
	c, err := generate(t.TempDir(), 6, 4, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := startBridge(&config{}, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop()
	if err := b.ready(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if b.sessions["claude-code"] != 2 || b.sessions["codex"] != 2 {
		t.Fatalf("sessions at start: %v, want 2 of each (the recent journals)", b.sessions)
	}
}

func TestLongJournalEndsWithTitle(t *testing.T) {
	for _, kind := range []string{kindClaude, kindCodex} {
		data, err := longJournal(kind, sessionUUID(kind, 1), 300<<10, "the-end")
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		if len(data) < 300<<10 || !bytes.Contains(lines[len(lines)-1], []byte("the-end")) {
			t.Errorf("%s: %d bytes, last line %.100s", kind, len(data), lines[len(lines)-1])
		}
		if kind == kindCodex && bytes.Count(data, []byte(`"type":"session_meta"`)) != 1 {
			t.Errorf("codex: want exactly one session_meta")
		}
	}
}

// TestPhasesSmall runs every phase in-process with tiny sizes: each gives
// rows with a value and a baseline.
func TestPhasesSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bridge")
	}
	cfg, err := parseFlags([]string{"-quick", "-old", "6", "-recent", "4", "-ingest-mb", "1", "-appends", "5",
		"-append-gap", "2ms", "-fanout-events", "20", "-clients", "1,3", "-idle", "200ms", "-rss-sessions", "6", "-rss-clients", "2", "-turns", "3", "-baseline", "none"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.InProcess = true
	cfg.ingestBytes = 128 << 10
	cfg.streamBytes = 256 << 10
	cfg.settle = 50 * time.Millisecond
	var out, errOut bytes.Buffer
	cfg.Dir = t.TempDir()
	if err := run(cfg, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	t.Log(errOut.String())
	table := out.String()
	for _, want := range []string{"cold start to ready", "ingest of one live Claude Code", "ingest of the same Codex rollout",
		"stream client reading", "append → stream latency", "delivered to 3 stream client", "encoded per event", "idle over", "memory with 6 live sessions",
		"turn-heavy (a turn per two records, 3 turns per journal): cold start", "turn-heavy (a turn per two records, 3 turns per journal): append → stream latency",
		"turn-heavy (a turn per two records, 3 turns per journal): idle", "turn-heavy (a turn per two records, 3 turns per journal): memory",
		"history after the cold start", "cold start to ready (6 old + 4 recent journals, 0 MiB) vs decoding all once, history on vs off",
		"append → stream latency, p50 / p99 / max (5 appends", "idle over 200ms: 10 journals in", "memory with 6 live sessions and 2 stream clients, history on vs off"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// 19 rows of the phases, a history row per cold start phase and a
	// history on vs off row per -history-phases phase.
	if n := strings.Count(table, "\n| "); n != 19+2+len(historyPhases) {
		t.Errorf("table has %d rows, want %d:\n%s", n, 19+2+len(historyPhases), table)
	}
	if n := strings.Count(table, "history on vs off (same run)"); n != len(historyPhases) {
		t.Errorf("%d rows compare history on and off, want %d:\n%s", n, len(historyPhases), table)
	}
	// The corpora are gone.
	left, _ := filepath.Glob(filepath.Join(cfg.Dir, "*"))
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
