package opencode

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// copyDB copies a database fixture into a temporary directory: opening a
// database in WAL mode (even read-only) may create its -wal and -shm
// files, which must not appear in testdata.
func copyDB(t testing.TB, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "opencode.db")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// folder folds mapped events as Sessions would, failing on a rejected one.
type folder struct {
	t *testing.T
	s map[string]*fold.Session
}

// apply maps records and folds their events.
func (f *folder) apply(m *Mapper, recs []Record) {
	f.t.Helper()
	for _, r := range recs {
		f.add(m.Apply(r))
	}
}

// view is the view of session id's fold, as Sessions.View gives it.
func (f *folder) view(id string) fold.View { return fold.ViewOf(f.s[id]) }

func (f *folder) add(outs []Out) {
	f.t.Helper()
	for _, o := range outs {
		e := o.Event
		validate.RedactEvent(&e)
		s := f.s[o.Session]
		if s == nil {
			s = fold.NewSession(o.Session, Harness)
			f.s[o.Session] = s
		}
		if is := s.Apply(e); len(is) > 0 {
			f.t.Fatalf("fold rejected %s for %s: %+v", e.Kind, o.Session, is)
		}
	}
}

// logAsks reads the permission requests of a log fixture, attributed as
// the handler does (the session the run named last).
func logAsks(t *testing.T, path string) []Ask {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{}
	var asks []Ask
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l, ok := ParseLog(sc.Bytes())
		if !ok {
			continue
		}
		if l.Ask != nil {
			l.Ask.Session = runs[l.Run]
			asks = append(asks, *l.Ask)
			continue
		}
		runs[l.Run] = l.Session
	}
	return asks
}

// rows maps the records of an opencode database as the golden harness's
// journal "rows", line n being the nth record (then, once its events are
// folded, the log's permission requests it made answerable, asks), their
// events redacted as Sessions redacts them.
func rows(t *testing.T, name string, recs []Record, asks []Ask) (sourcestest.FilesGolden, *Mapper) {
	t.Helper()
	var m *Mapper
	next := 0
	g := sourcestest.MapFiles(t, func(view func(string) fold.View) sourcestest.Engine {
		m = NewMapper(view)
		redacted := func(outs []Out) []sourcestest.SessionEvent {
			var out []sourcestest.SessionEvent
			for _, o := range outs {
				e := o.Event
				validate.RedactEvent(&e)
				out = append(out, sourcestest.SessionEvent{Session: o.Session, Event: e})
			}
			return out
		}
		return sourcestest.Engine{
			Line: func(string, []byte) ([]sourcestest.SessionEvent, string) {
				if next == len(recs) { // the one empty line of no records
					return nil, ""
				}
				next++
				return redacted(m.Apply(recs[next-1])), ""
			},
			After: func(string) []sourcestest.SessionEvent {
				var out []Out
				for i := 0; i < len(asks); i++ {
					if o, ok := m.Ask(asks[i]); ok {
						out = append(out, o...)
						asks = append(asks[:i], asks[i+1:]...)
						i--
					}
				}
				return redacted(out)
			},
		}
	}, Harness, []sourcestest.Journal{{Name: name, Data: bytes.Repeat([]byte("row\n"), len(recs))}})
	return g, m
}

// TestGolden maps the databases the real opencode CLI wrote (see
// testdata/SOURCES.md), twice: as the live source reads them, the event
// journal from its first row with the log's permission requests placed
// as soon as their tool runs; and as the start reads them, from the
// tables. Each is compared with testdata/golden/<name>.{journal,scan}.json
// (-update rewrites them).
func TestGolden(t *testing.T) {
	fixtures, _ := filepath.Glob("testdata/cli/*.db")
	if len(fixtures) == 0 {
		t.Fatal("no fixtures")
	}
	for _, fx := range fixtures {
		name := strings.TrimSuffix(filepath.Base(fx), ".db")
		t.Run(name, func(t *testing.T) {
			asks := logAsks(t, strings.TrimSuffix(fx, ".db")+".log")
			d, err := OpenDB(copyDB(t, fx))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if !d.Events() {
				t.Fatal("the CLI's database has no event journal")
			}
			recs, err := d.Changes(context.Background()) // from rowid 0
			if err != nil {
				t.Fatal(err)
			}
			g, m := rows(t, "journal", recs, asks)
			if len(m.Skipped) > 0 {
				t.Errorf("skipped: %v", m.Skipped)
			}
			sourcestest.Golden(t, filepath.Join("testdata", "golden", name+".journal.json"), g, *update)

			if recs, err = d.Scan(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			g, _ = rows(t, "scan", recs, nil)
			sourcestest.Golden(t, filepath.Join("testdata", "golden", name+".scan.json"), g, *update)
		})
	}
}
