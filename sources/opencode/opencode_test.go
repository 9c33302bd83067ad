package opencode

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbridge/agentbridge/sources"
)

// TestDefaultHome: the data directory is $XDG_DATA_HOME/opencode when that is
// absolute, else ~/.local/share/opencode; the configuration wins.
func TestDefaultHome(t *testing.T) {
	reg, ok := sources.Lookup(ID)
	if !ok {
		t.Fatal("opencode is not registered")
	}
	for _, tc := range []struct {
		env        map[string]string
		configured string
		want       string
	}{
		{map[string]string{"HOME": "/home/u"}, "", "/home/u/.local/share/opencode"},
		{map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "/srv/data"}, "", "/srv/data/opencode"},
		{map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "rel/data"}, "", "/home/u/.local/share/opencode"},
		{map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "/srv/data"}, "/opt/oc", "/opt/oc"},
		{map[string]string{}, "", ""},
	} {
		getenv := func(k string) string { return tc.env[k] }
		if got := reg.ResolveHome(tc.configured, getenv); got != tc.want {
			t.Errorf("env %v, configured %q: home %q; want %q", tc.env, tc.configured, got, tc.want)
		}
	}
}

// TestDBOf: the watch wakes for the databases and their -wal files only.
func TestDBOf(t *testing.T) {
	const home = "/d/opencode"
	for p, want := range map[string]string{
		"/d/opencode/opencode.db":          "/d/opencode/opencode.db",
		"/d/opencode/opencode.db-wal":      "/d/opencode/opencode.db",
		"/d/opencode/opencode-beta.db-wal": "/d/opencode/opencode-beta.db",
		"/d/opencode/opencode.db-shm":      "",
		"/d/opencode/opencode.db-journal":  "",
		"/d/opencode/other.db":             "",
		"/d/opencode/log/opencode.db":      "",
		"/d/opencode/opencode-a/b.db":      "",
		"/d/opencode/opencode-../../x.db":  "",
	} {
		if got := dbOf(home, p); got != want {
			t.Errorf("dbOf(%q) = %q; want %q", p, got, want)
		}
	}
}

// TestQueriesMetric: the source's collector (GET /metrics through the hub)
// reports the queries run: more after a database is read, the same while
// nothing changes.
func TestQueriesMetric(t *testing.T) {
	src := New(sources.Options{})
	before := testutil.ToFloat64(src)
	p := copyDB(t, "testdata/cli/run-auto.db")
	d, err := OpenDB(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Scan(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	after := testutil.ToFloat64(src)
	if after <= before || after != float64(queries.Load()) {
		t.Errorf("agentbridge_opencode_queries_total went from %v to %v after a scan (queries %d); want it to follow the count", before, after, queries.Load())
	}
	if again := testutil.ToFloat64(src); again != after {
		t.Errorf("the metric moved from %v to %v with no query", after, again)
	}
}
