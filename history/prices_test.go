package history

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
)

// TestPriceLookup: exact names, prefixes (longest wins), the forms agents
// write (dots, provider prefixes, display names), user prices first, and
// no price for a model the table does not know.
func TestPriceLookup(t *testing.T) {
	t.Parallel()
	p, err := newPrices([]Price{
		{Model: "claude-sonnet-4-5*", Input: 1},
		{Model: "my-model", Input: 2},
		{Model: "my-*", Input: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		input float64
		user  bool
		ok    bool
	}{
		{"claude-opus-4-6", 5, false, true},
		{"claude-opus-4-1-20250805", 15, false, true},
		{"claude-opus-4-20250514", 15, false, true},
		{"claude-haiku-4.5", 1, false, true},
		{"claude-haiku-4-5-20251001", 1, false, true},
		{"claude-3-5-haiku-20241022", 0.8, false, true},
		{"anthropic/claude-sonnet-4-6", 3, false, true},
		{"claude-sonnet-4-5-20250929", 1, true, true}, // the user's price
		{"claude-sonnet-4.5", 1, true, true},
		{"gpt-5", 1.25, false, true},
		{"gpt-5-codex", 1.25, false, true},
		{"gpt-5-mini", 0.25, false, true},
		{"gpt-5.4-mini", 0.75, false, true},
		{"gpt-5.4", 2.5, false, true},
		{"gpt-5.2-codex", 1.75, false, true},
		{"o3", 2, false, true},
		{"o4-mini", 1.1, false, true},
		{"gpt-4.1", 2, false, true},
		{"gemini-2.5-pro", 1.25, false, true},
		{"gemini-3-flash-preview", 0.5, false, true},
		{"Gemini 3.1 Pro (High)", 2, false, true},
		{"qwen3-coder-plus", 1, false, true},
		{"devstral-2", 0.4, false, true},
		{"mistral-medium-3.5", 0.4, false, true},
		{"my-model", 2, true, true},
		{"my-other", 3, true, true},
		{"gpt-5.6-sol", 0, false, false}, // a version the table does not name
		{"claude-opus-5", 0, false, false},
		{"mock-model", 0, false, false},
		{"", 0, false, false},
	} {
		pr, user, ok := p.lookup(tc.model)
		if ok != tc.ok || user != tc.user || pr.Input != tc.input {
			t.Errorf("lookup(%q) = input %v, user %v, ok %v; want %v, %v, %v", tc.model, pr.Input, user, ok, tc.input, tc.user, tc.ok)
		}
	}
}

// TestBuiltinPrice: the exported lookup prices a model as a store without
// user prices does, all four prices, and none for a model the table lacks.
func TestBuiltinPrice(t *testing.T) {
	t.Parallel()
	store, err := newPrices(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"claude-opus-4-6", "claude-sonnet-4.5", "anthropic/claude-haiku-4-5-20251001", "gpt-5.4-mini", "gpt-5.2", "gemini-3-flash-preview", "qwen3-coder-plus", "mock-model", "claude-opus-5", ""} {
		want, _, wantOK := store.lookup(model)
		if got, ok := BuiltinPrice(model); got != want || ok != wantOK {
			t.Errorf("BuiltinPrice(%q) = %+v, %v; the store's lookup %+v, %v", model, got, ok, want, wantOK)
		}
	}
	if p, ok := BuiltinPrice("claude-opus-4-6"); !ok || p != (Price{Model: "claude-opus-4-6*", Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25}) {
		t.Errorf("BuiltinPrice(claude-opus-4-6) = %+v, %v; want the table's claude-opus-4-6* row", p, ok)
	}
	if _, ok := BuiltinPrice("mock-model"); ok {
		t.Error("mock-model has a price")
	}
}

// TestCost: the tally's cost says where its prices came from and counts
// the tokens it could not price.
func TestCost(t *testing.T) {
	t.Parallel()
	p, err := newPrices([]Price{{Model: "mine", Output: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var tl tally
	if tl.cost() != nil {
		t.Error("an empty tally has a cost")
	}
	p.add(&tl, "unknown", agentbridge.Usage{InputTokens: 7})
	if tl.cost() != nil {
		t.Error("a tally of unpriced tokens only has a cost")
	}
	p.add(&tl, "gpt-5", agentbridge.Usage{InputTokens: 1_000_000, CacheReadTokens: 1_000_000})
	if c := tl.cost(); c == nil || c.USD != 1.375 || !c.Estimate || c.PricesAsOf != PricesAsOf || c.UnpricedTokens != 7 {
		t.Errorf("cost = %+v, want 1.375 USD, an estimate as of the table, 7 unpriced", c)
	}
	p.add(&tl, "mine", agentbridge.Usage{OutputTokens: 500_000})
	if c := tl.cost(); c == nil || c.USD != 2.375 || c.PricesAsOf != PricesConfig {
		t.Errorf("cost = %+v, want 2.375 USD as of config", c)
	}
}

func TestPricesAsOfIsADate(t *testing.T) {
	t.Parallel()
	if _, err := time.Parse(time.DateOnly, PricesAsOf); err != nil {
		t.Error(err)
	}
	if err := ValidatePrices(builtinPrices); err != nil {
		t.Errorf("the built-in table: %v", err)
	}
}

func TestDecodePrices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, err string
	}{
		{`[{"model":"a","input":1,"output":2,"cacheRead":0.1,"cacheWrite":1.25}]`, ""},
		{`[]`, ""},
		{`[{"model":"","input":1}]`, "model is empty"},
		{`[{"model":"  ","input":1}]`, "model is empty"},
		{`[{"model":"a","input":-1}]`, "prices[0].input: -1 is not a price"},
		{`[{"model":"a","output":1e999}]`, "prices"},
		{`[{"model":"a*b"}]`, "before its end"},
		{`[{"model":"a"},{"model":"A"}]`, "priced twice"},
		{`[{"model":"a","inptu":1}]`, "unknown field"},
		{`[{"model":"a"}] []`, "trailing"},
		{`{"model":"a"}`, "prices"},
	} {
		_, err := DecodePrices([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("DecodePrices(%s) = %v, want no error", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("DecodePrices(%s) = %v, want an error saying %q", tc.in, err, tc.err)
		}
	}
	if err := ValidatePrices([]Price{{Model: "a", CacheRead: nan()}}); err == nil {
		t.Error("a NaN price is taken")
	}
}

func nan() float64 {
	var zero float64
	return zero / zero
}
