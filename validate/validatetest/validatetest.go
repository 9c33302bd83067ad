// Package validatetest holds the test helpers for lists of contract
// issues, shared by the tests of package validate and package fold: an
// expected issue is its path and code; a message is checked only for
// being there and not repeating a value. It reads an issue's Path, Code
// and Message fields without importing validate, so that validate's own
// tests can use it too.
package validatetest

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Want is an expected issue: path and code; messages are not compared.
type Want[C ~string] struct {
	Path string
	Code C
}

// Issues pairs its arguments into expected issues: path, code, path, code…
func Issues[C ~string](pairs ...string) []Want[C] {
	var out []Want[C]
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Want[C]{pairs[i], C(pairs[i+1])})
	}
	return out
}

// issue is what the checks read of an issue, and the issue itself.
type issue struct {
	path, code, message string
	value               any
}

// fields reads got, a slice of issues (validate.Issue): each one's Path,
// Code and Message.
func fields(got any) []issue {
	v := reflect.ValueOf(got)
	out := make([]issue, v.Len())
	for i := range out {
		e := v.Index(i)
		out[i] = issue{e.FieldByName("Path").String(), e.FieldByName("Code").String(), e.FieldByName("Message").String(), e.Interface()}
	}
	return out
}

// Check compares issues by path and code, in any order, and checks that
// every issue has a message that does not repeat any of leak (values of 6
// bytes or more, so that short ones cannot match by chance). got is a
// slice of issues.
func Check[C ~string](tb testing.TB, call string, got any, want []Want[C], leak ...string) {
	tb.Helper()
	var gotPC []Want[C]
	for _, is := range fields(got) {
		gotPC = append(gotPC, Want[C]{is.path, C(is.code)})
		if is.message == "" {
			tb.Errorf("%s: issue %s/%s has no message", call, is.path, is.code)
		}
		for _, l := range leak {
			if len(l) >= 6 && strings.Contains(is.message, l) {
				tb.Errorf("%s: message %q repeats the value %q", call, is.message, l)
			}
		}
	}
	less := func(a, b Want[C]) bool { return a.Path+" "+string(a.Code) < b.Path+" "+string(b.Code) }
	if diff := cmp.Diff(want, gotPC, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
		tb.Errorf("%s issues mismatch (-want +got):\n%s", call, diff)
	}
}

// WellFormed asserts the form of every issue of got (a slice of issues):
// a path from "$", one of codes and a message.
func WellFormed[C ~string](tb testing.TB, call string, got any, codes []C) {
	tb.Helper()
	for _, i := range fields(got) {
		if !strings.HasPrefix(i.path, "$") || !slices.Contains(codes, C(i.code)) || i.message == "" {
			tb.Fatalf("%s: malformed issue %+v", call, i.value)
		}
	}
}
