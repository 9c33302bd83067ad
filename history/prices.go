package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/agentbridge/agentbridge"
)

// PricesAsOf is the date the built-in price table was checked against the
// vendors' published list prices (Cost.PricesAsOf).
const PricesAsOf = "2026-12-08"

// PricesConfig is Cost.PricesAsOf when a user's price (Options.Prices) was
// used for some of the tokens.
const PricesConfig = "config"

// builtinPrices is the built-in table: list prices in USD per million
// tokens, standard tier (no batch, priority or regional surcharge), the
// price of the shortest context tier where a vendor has tiers. CacheRead
// is the vendor's cached-input (cache hit) price; CacheWrite its cache
// write price, or the input price where a vendor bills cache writes as
// plain input. A model that matches no entry has no cost (its tokens are
// counted as unpriced): a prefix never reaches beyond one model version,
// so a new version is unpriced until the table names it.
var builtinPrices = []Price{
	// Anthropic: the Claude API pricing page (docs.anthropic.com, "Pricing"):
	// cache writes are the 5-minute cache's (1.25 × input), cache hits
	// 0.1 × input.
	{Model: "claude-opus-4", Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{Model: "claude-opus-4-2*", Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75}, // claude-opus-4-20250514
	{Model: "claude-opus-4-1*", Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{Model: "claude-opus-4-5*", Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{Model: "claude-opus-4-6*", Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{Model: "claude-opus-4-7*", Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{Model: "claude-opus-4-8*", Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{Model: "claude-sonnet-4", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Model: "claude-sonnet-4-2*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}, // claude-sonnet-4-20250514
	{Model: "claude-sonnet-4-5*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Model: "claude-sonnet-4-6*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Model: "claude-haiku-4-5*", Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	{Model: "claude-3-opus*", Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{Model: "claude-3-7-sonnet*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Model: "claude-3-5-sonnet*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Model: "claude-3-sonnet*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{Model: "claude-3-5-haiku*", Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	{Model: "claude-3-haiku*", Input: 0.25, Output: 1.25, CacheRead: 0.03, CacheWrite: 0.3},

	// OpenAI: the API pricing page (developers.openai.com, "Pricing"),
	// standard tier, short context. Cached input is CacheRead; OpenAI bills
	// no cache write beyond input.
	{Model: "gpt-5", Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25},
	{Model: "gpt-5-2*", Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25}, // dated gpt-5 snapshots
	{Model: "gpt-5-codex*", Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25},
	{Model: "gpt-5-mini*", Input: 0.25, Output: 2, CacheRead: 0.025, CacheWrite: 0.25},
	{Model: "gpt-5-nano*", Input: 0.05, Output: 0.4, CacheRead: 0.005, CacheWrite: 0.05},
	{Model: "gpt-5.1*", Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25}, // gpt-5.1, -codex, -codex-max
	{Model: "gpt-5.1-codex-mini*", Input: 0.25, Output: 2, CacheRead: 0.025, CacheWrite: 0.25},
	{Model: "gpt-5.2*", Input: 1.75, Output: 14, CacheRead: 0.175, CacheWrite: 1.75}, // gpt-5.2, -codex
	{Model: "gpt-5.3-codex*", Input: 1.75, Output: 14, CacheRead: 0.175, CacheWrite: 1.75},
	{Model: "gpt-5.4*", Input: 2.5, Output: 15, CacheRead: 0.25, CacheWrite: 2.5},
	{Model: "gpt-5.4-mini*", Input: 0.75, Output: 4.5, CacheRead: 0.075, CacheWrite: 0.75},
	{Model: "gpt-5.4-nano*", Input: 0.2, Output: 1.25, CacheRead: 0.02, CacheWrite: 0.2},
	{Model: "gpt-5.4-pro*", Input: 30, Output: 180, CacheRead: 30, CacheWrite: 30},
	{Model: "gpt-5.5*", Input: 5, Output: 30, CacheRead: 0.5, CacheWrite: 5},
	{Model: "gpt-5.5-pro*", Input: 30, Output: 180, CacheRead: 30, CacheWrite: 30},
	{Model: "gpt-4.1*", Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2},
	{Model: "gpt-4.1-mini*", Input: 0.4, Output: 1.6, CacheRead: 0.1, CacheWrite: 0.4},
	{Model: "gpt-4.1-nano*", Input: 0.1, Output: 0.4, CacheRead: 0.025, CacheWrite: 0.1},
	{Model: "gpt-4o*", Input: 2.5, Output: 10, CacheRead: 1.25, CacheWrite: 2.5},
	{Model: "gpt-4o-mini*", Input: 0.15, Output: 0.6, CacheRead: 0.075, CacheWrite: 0.15},
	{Model: "o1*", Input: 15, Output: 60, CacheRead: 7.5, CacheWrite: 15},
	{Model: "o3*", Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2},
	{Model: "o3-mini*", Input: 1.1, Output: 4.4, CacheRead: 0.55, CacheWrite: 1.1},
	{Model: "o3-pro*", Input: 20, Output: 80, CacheRead: 20, CacheWrite: 20},
	{Model: "o4-mini*", Input: 1.1, Output: 4.4, CacheRead: 0.275, CacheWrite: 1.1},
	{Model: "codex-mini*", Input: 1.5, Output: 6, CacheRead: 0.375, CacheWrite: 1.5},

	// Google: the Gemini API pricing page (ai.google.dev, "Gemini Developer
	// API pricing"), paid tier, prompts up to 200k tokens. CacheRead is the
	// context-caching price (a tenth of input; for 3.5 Flash, whose page
	// gives input and output only, that tenth is assumed); cache storage
	// (per hour) is not counted, and a cache write is billed as input.
	{Model: "gemini-2.0-flash*", Input: 0.1, Output: 0.4, CacheRead: 0.025, CacheWrite: 0.1},
	{Model: "gemini-2.5-pro*", Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25},
	{Model: "gemini-2.5-flash*", Input: 0.3, Output: 2.5, CacheRead: 0.03, CacheWrite: 0.3},
	{Model: "gemini-2.5-flash-lite*", Input: 0.1, Output: 0.4, CacheRead: 0.01, CacheWrite: 0.1},
	{Model: "gemini-3-pro*", Input: 2, Output: 12, CacheRead: 0.2, CacheWrite: 2},
	{Model: "gemini-3.1-pro*", Input: 2, Output: 12, CacheRead: 0.2, CacheWrite: 2},
	{Model: "gemini-3-flash*", Input: 0.5, Output: 3, CacheRead: 0.05, CacheWrite: 0.5},
	{Model: "gemini-3.1-flash-lite*", Input: 0.25, Output: 1.5, CacheRead: 0.025, CacheWrite: 0.25},
	{Model: "gemini-3.5-flash*", Input: 1.5, Output: 9, CacheRead: 0.15, CacheWrite: 1.5},

	// Alibaba: Model Studio's Qwen-Coder pages (help.aliyun.com and
	// alibabacloud.com, "Qwen-Coder"), the first context tier (up to 32k
	// input tokens); an implicit cache hit is 20% of input (both pages). The
	// mainland page lists ¥4/¥16 (plus) and ¥1/¥4 (flash) per million; the
	// USD figures are the international (Singapore) list prices, which the
	// check of PricesAsOf could not see on a page of its own: override them
	// in history.prices if they moved. Qwen Code's own free model
	// ("coder-model") has no price.
	{Model: "qwen3-coder-plus*", Input: 1, Output: 5, CacheRead: 0.2, CacheWrite: 1},
	{Model: "qwen3-coder-flash*", Input: 0.3, Output: 1.5, CacheRead: 0.06, CacheWrite: 0.3},

	// Mistral: the API pricing page (mistral.ai, "Pricing") and Devstral 2's
	// model page; no cache prices are published, so cached input is billed
	// as input.
	{Model: "devstral-2*", Input: 0.4, Output: 2, CacheRead: 0.4, CacheWrite: 0.4},
	{Model: "devstral-medium*", Input: 0.4, Output: 2, CacheRead: 0.4, CacheWrite: 0.4},
	{Model: "devstral-small*", Input: 0.1, Output: 0.3, CacheRead: 0.1, CacheWrite: 0.1},
	{Model: "mistral-medium-3*", Input: 0.4, Output: 2, CacheRead: 0.4, CacheWrite: 0.4},
}

// maxPrices bounds a user's price list.
const maxPrices = 1000

// maxModelName bounds a price's model pattern.
const maxModelName = 200

// ValidatePrices checks a user's price list: every model named (at most
// 200 bytes, "*" only at its end), none twice, every price a finite
// number ≥ 0, at most 1000 entries.
func ValidatePrices(ps []Price) error {
	if len(ps) > maxPrices {
		return fmt.Errorf("prices: %d entries, more than %d", len(ps), maxPrices)
	}
	seen := map[string]bool{}
	for i, p := range ps {
		switch m := p.Model; {
		case strings.TrimSpace(m) == "":
			return fmt.Errorf("prices[%d].model: the model is empty (name it, or a prefix ending in *)", i)
		case len(m) > maxModelName:
			return fmt.Errorf("prices[%d].model: longer than %d bytes", i, maxModelName)
		case strings.Contains(strings.TrimSuffix(m, "*"), "*"):
			return fmt.Errorf("prices[%d].model: %q has a \"*\" before its end (only a final * makes a prefix)", i, m)
		}
		key := normalize(p.Model)
		if seen[key] {
			return fmt.Errorf("prices[%d].model: %q is priced twice", i, p.Model)
		}
		seen[key] = true
		for _, v := range []struct {
			name string
			v    float64
		}{{"input", p.Input}, {"output", p.Output}, {"cacheRead", p.CacheRead}, {"cacheWrite", p.CacheWrite}} {
			if math.IsNaN(v.v) || math.IsInf(v.v, 0) || v.v < 0 {
				return fmt.Errorf("prices[%d].%s: %v is not a price of %q (USD per million tokens, 0 or more)", i, v.name, v.v, p.Model)
			}
		}
	}
	return nil
}

// DecodePrices decodes a JSON list of prices (the form of the
// configuration's history.prices) and validates it. Unknown fields are
// refused, so a misspelt price is not silently 0.
func DecodePrices(data []byte) ([]Price, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ps []Price
	if err := dec.Decode(&ps); err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	if dec.More() {
		return nil, errors.New("prices: trailing data after the list")
	}
	if err := ValidatePrices(ps); err != nil {
		return nil, err
	}
	return ps, nil
}

// prices looks models up: the user's list first, then the built-in table;
// in each, an exact match, else the longest prefix.
type prices struct {
	user, builtin []pattern
}

type pattern struct {
	prefix bool
	model  string // normalized, without the "*"
	price  Price
}

func newPrices(user []Price) (prices, error) {
	if err := ValidatePrices(user); err != nil {
		return prices{}, err
	}
	return prices{user: patterns(user), builtin: patterns(builtinPrices)}, nil
}

func patterns(ps []Price) []pattern {
	out := make([]pattern, 0, len(ps))
	for _, p := range ps {
		m, prefix := strings.CutSuffix(p.Model, "*")
		out = append(out, pattern{prefix: prefix, model: normalize(m), price: p})
	}
	return out
}

// normalize is the form models are matched in: lower case, without a
// provider's prefix ("anthropic/claude-…"), spaces as dashes, and for
// Claude models dots as dashes ("claude-sonnet-4.5" is
// "claude-sonnet-4-5", as some agents write it).
func normalize(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.ReplaceAll(m, " ", "-")
	if strings.HasPrefix(m, "claude-") {
		m = strings.ReplaceAll(m, ".", "-")
	}
	return m
}

// BuiltinPrice returns the built-in table's price of model, as a store
// with no user prices looks it up (an exact name, else the longest prefix,
// in the forms agents write it); ok false when the table has none. It lets
// a check of the history's costs price tokens itself.
func BuiltinPrice(model string) (price Price, ok bool) {
	p := prices{builtin: patterns(builtinPrices)}
	price, _, ok = p.lookup(model)
	return price, ok
}

// lookup returns the price of a model and whether it came from the user's
// list; ok false when none matches.
func (p *prices) lookup(model string) (price Price, user, ok bool) {
	if model == "" {
		return Price{}, false, false
	}
	m := normalize(model)
	if pr, ok := match(p.user, m); ok {
		return pr, true, true
	}
	pr, ok := match(p.builtin, m)
	return pr, false, ok
}

func match(ps []pattern, m string) (Price, bool) {
	best, bestLen := -1, -1
	for i, p := range ps {
		switch {
		case !p.prefix && p.model == m:
			return p.price, true
		case p.prefix && strings.HasPrefix(m, p.model) && len(p.model) > bestLen:
			best, bestLen = i, len(p.model)
		}
	}
	if best < 0 {
		return Price{}, false
	}
	return ps[best].price, true
}

// tally sums the cost of usage by model.
type tally struct {
	usd      float64
	priced   bool // some tokens had a price
	config   bool // some price was the user's
	unpriced int64
}

func (p *prices) add(t *tally, model string, u agentbridge.Usage) {
	n := tokens(u)
	if n == 0 {
		return
	}
	pr, user, ok := p.lookup(model)
	if !ok {
		t.unpriced += n
		return
	}
	t.priced = true
	t.config = t.config || user
	t.usd += (float64(u.InputTokens)*pr.Input + float64(u.OutputTokens)*pr.Output +
		float64(u.CacheReadTokens)*pr.CacheRead + float64(u.CacheWriteTokens)*pr.CacheWrite) / 1e6
}

func (t *tally) merge(o tally) {
	t.usd += o.usd
	t.priced = t.priced || o.priced
	t.config = t.config || o.config
	t.unpriced += o.unpriced
}

// cost is the tally as the wire shows it: nil when no token had a price.
func (t *tally) cost() *agentbridge.Cost {
	if !t.priced {
		return nil
	}
	asOf := PricesAsOf
	if t.config {
		asOf = PricesConfig
	}
	return &agentbridge.Cost{USD: t.usd, Estimate: true, PricesAsOf: asOf, UnpricedTokens: t.unpriced}
}

func tokens(u agentbridge.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}
