package main

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// templates are real Claude Code and Codex journals (testdata/SOURCES.md);
// every generated journal is one of them with its ids rewritten.
//
//go:embed testdata/claude/*.jsonl testdata/codex/*.jsonl
var templates embed.FS

// Agent families of the generated journals.
const (
	kindClaude = "claude"
	kindCodex  = "codex"
)

// template is one journal cut into literal runs and identity values, so
// that rendering it with new ids is a concatenation.
type template struct {
	name    string
	kind    string // kindClaude or kindCodex
	session string // the journal's own session (thread) id
	segs    []seg
	size    int
}

// seg is a literal run of bytes, or an id to rewrite.
type seg struct {
	lit []byte
	id  string
}

// idRe matches the ids a journal's records link by: UUIDs (sessions,
// records, prompts, turns, threads) and tool and call ids.
var idRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|toolu_[A-Za-z0-9]{6,}|call_[A-Za-z0-9]{6,}`)

// loadTemplates reads the embedded journals of one kind.
func loadTemplates(kind string) ([]*template, error) {
	names, err := fs.Glob(templates, "testdata/"+kind+"/*.jsonl")
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("load %s templates: none found (%v)", kind, err)
	}
	var out []*template
	for _, n := range names {
		data, err := templates.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("load template: %w", err)
		}
		t, err := parseTemplate(path.Base(n), kind, data)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseTemplate(name, kind string, data []byte) (*template, error) {
	t := &template{name: name, kind: kind, size: len(data)}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r struct {
			Type      string `json:"type"`
			SessionID string `json:"sessionId"`
			Payload   struct {
				ID string `json:"id"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		switch {
		case kind == kindClaude && r.SessionID != "" && t.session == "":
			t.session = r.SessionID
		case kind == kindCodex && r.Type == "session_meta" && t.session == "":
			t.session = r.Payload.ID
		}
	}
	if t.session == "" {
		return nil, fmt.Errorf("template %s: no session id", name)
	}
	t.segs = cut(data)
	return t, nil
}

// cut splits data into literal runs and ids.
func cut(data []byte) []seg {
	var out []seg
	last := 0
	for _, m := range idRe.FindAllIndex(data, -1) {
		if m[0] > last {
			out = append(out, seg{lit: data[last:m[0]]})
		}
		out = append(out, seg{id: string(data[m[0]:m[1]])})
		last = m[1]
	}
	if last < len(data) {
		out = append(out, seg{lit: data[last:]})
	}
	return out
}

// render appends the journal with its session id replaced by session and,
// for rep > 0, every other id suffixed so that a body repeated in one file
// opens fresh turns and tools. skipMeta leaves Codex session_meta lines out
// (a long rollout has one, at its start).
func (t *template) render(dst []byte, session string, rep int, skipMeta bool) []byte {
	start := len(dst)
	suffix := "-r" + strconv.Itoa(rep)
	for _, s := range t.segs {
		switch {
		case s.lit != nil:
			dst = append(dst, s.lit...)
		case s.id == t.session:
			dst = append(dst, session...)
		case rep > 0:
			dst = append(dst, s.id...)
			dst = append(dst, suffix...)
		default:
			dst = append(dst, s.id...)
		}
	}
	if skipMeta {
		dst = dropLines(dst, start, []byte(`"type":"session_meta"`))
	}
	if len(dst) > start && dst[len(dst)-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst
}

// dropLines removes the lines of dst[start:] that contain marker.
func dropLines(dst []byte, start int, marker []byte) []byte {
	body := append([]byte(nil), dst[start:]...)
	dst = dst[:start]
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		line := body
		if i >= 0 {
			line, body = body[:i+1], body[i+1:]
		} else {
			body = nil
		}
		if !bytes.Contains(line, marker) {
			dst = append(dst, line...)
		}
	}
	return dst
}

// sessionUUID is the deterministic id of generated session i of a kind.
func sessionUUID(kind string, i int) string {
	k := 0xc1a0de
	if kind == kindCodex {
		k = 0xc0dec5
	}
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", k, i)
}

// corpus describes a generated tree of journals.
type corpus struct {
	Root      string `json:"root"`
	ClaudeDir string `json:"claudeDir"` // CLAUDE_CONFIG_DIR
	CodexHome string `json:"codexHome"` // CODEX_HOME
	Old       int    `json:"old"`
	Recent    int    `json:"recent"`
	Bytes     int64  `json:"bytes"`
}

// journalPath returns where generated session i of a kind lives.
func (c *corpus) journalPath(kind string, i int) string {
	id := sessionUUID(kind, i)
	if kind == kindClaude {
		return filepath.Join(c.ClaudeDir, "projects", fmt.Sprintf("-home-bench-project-%02d", i%20), id+".jsonl")
	}
	mon, day := 1+(i/28)%12, 1+i%28
	return filepath.Join(c.CodexHome, "sessions", "2026", fmt.Sprintf("%02d", mon), fmt.Sprintf("%02d", day),
		fmt.Sprintf("rollout-2026-%02d-%02dT10-00-00-%s.jsonl", mon, day, id))
}

// generate writes old+recent journals under root, alternating Claude Code
// and Codex and cycling through the templates. Old journals are dated
// three days back and more (outside the bridge's 2 h window); recent ones
// within the last minutes. It stops with an error before writing more than
// maxBytes.
func generate(root string, old, recent int, maxBytes int64) (*corpus, error) {
	tpl := map[string][]*template{}
	for _, k := range []string{kindClaude, kindCodex} {
		t, err := loadTemplates(k)
		if err != nil {
			return nil, err
		}
		tpl[k] = t
	}
	pick := func(kind string, i int) *template { ts := tpl[kind]; return ts[(i/2)%len(ts)] }
	return layOut(root, old, recent, maxBytes,
		func(kind string, i int) int64 { return int64(pick(kind, i).size) },
		func(dst []byte, kind string, i int) []byte {
			return pick(kind, i).render(dst, sessionUUID(kind, i), 0, false)
		})
}

// layOut writes old+recent journals under root, alternating Claude Code
// and Codex, journal i of a kind being render(dst, kind, i) of about
// size(kind, i) bytes, dated as generate says. It stops with an error
// before writing more than maxBytes.
func layOut(root string, old, recent int, maxBytes int64, size func(kind string, i int) int64, render func(dst []byte, kind string, i int) []byte) (*corpus, error) {
	c := &corpus{Root: root, ClaudeDir: filepath.Join(root, "claude"), CodexHome: filepath.Join(root, "codex"), Old: old, Recent: recent}
	var est int64
	for i := range old + recent {
		est += size([]string{kindClaude, kindCodex}[i%2], i)
	}
	if est > maxBytes {
		return nil, fmt.Errorf("the corpus would hold %d MiB, over the limit of %d MiB: ask for fewer journals", est>>20, maxBytes>>20)
	}
	for _, d := range []string{filepath.Join(c.ClaudeDir, "projects"), filepath.Join(c.CodexHome, "sessions")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("make corpus: %w", err)
		}
	}
	now := time.Now()
	var buf []byte
	for i := range old + recent {
		kind := []string{kindClaude, kindCodex}[i%2]
		p := c.journalPath(kind, i)
		buf = render(buf[:0], kind, i)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("make corpus: %w", err)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return nil, fmt.Errorf("make corpus: %w", err)
		}
		mt := now.Add(-72*time.Hour - time.Duration(i)*time.Minute)
		if i >= old {
			mt = now.Add(-time.Duration(i-old) * 50 * time.Millisecond) // within a minute: inside every window and linger
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			return nil, fmt.Errorf("make corpus: %w", err)
		}
		c.Bytes += int64(len(buf))
	}
	return c, nil
}

// longJournal renders one journal of at least size bytes by repeating the
// bodies of the templates of kind, ending with a line that sets the title
// to marker (a custom-title record, or a Codex thread_name_updated event).
func longJournal(kind, session string, size int, marker string) ([]byte, error) {
	ts, err := loadTemplates(kind)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size+256<<10)
	// The first body as recorded (a rollout's one session_meta included),
	// then bodies with fresh ids (and no further session_meta).
	buf = ts[0].render(buf, session, 0, false)
	for rep := 1; len(buf) < size; rep++ {
		t := ts[rep%len(ts)]
		buf = t.render(buf, session, rep, kind == kindCodex)
	}
	return append(buf, titleLine(kind, session, marker)...), nil
}

// titleLine is one journal line that sets the session's title.
func titleLine(kind, session, title string) []byte {
	if kind == kindClaude {
		return fmt.Appendf(nil, `{"type":"custom-title","customTitle":%q,"sessionId":%q}`+"\n", title, session)
	}
	return fmt.Appendf(nil, `{"timestamp":%q,"type":"event_msg","payload":{"type":"thread_name_updated","thread_id":%q,"thread_name":%q}}`+"\n",
		time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), session, title)
}

// promptLine is a Claude Code user prompt record.
func promptLine(session, text string, n int) []byte {
	return fmt.Appendf(nil, `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/bench/project","sessionId":%q,"version":"2.1.87","gitBranch":"main","type":"user","message":{"role":"user","content":%q},"uuid":"00000000-0000-4000-8000-%012x","timestamp":%q}`+"\n",
		session, text, n, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
}
