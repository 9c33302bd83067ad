package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/history"
)

// History is the history section.
type History struct {
	// Enabled keeps the history (default true): the sessions, turns,
	// waits and usage the bridge sees, in an SQLite database (File).
	Enabled bool `koanf:"enabled"`
	// Retention is how long the history is kept (default 90 days; at
	// least an hour): older sessions are pruned at start and every day. It
	// takes a Go duration or a number of days ("90d").
	Retention time.Duration `koanf:"retention"`
	// Prices are the user's prices per model, before the built-in table
	// (history.Price: USD per million tokens; a model ending in "*" is a
	// prefix).
	Prices []history.Price `koanf:"prices"`
	// File is the database; default history.db in StateDir, "" when there
	// is no state directory (the history is then off).
	File string `koanf:"file"`
}

// DefaultRetention is history.retention's default.
const DefaultRetention = history.DefaultRetention

// MinRetention is the shortest history.retention accepted.
const MinRetention = time.Hour

// check validates the history section.
func (h History) check(bad func(string, ...any)) {
	if h.Retention < MinRetention {
		bad("history.retention: %v is below the minimum %v", h.Retention, MinRetention)
	}
	if err := history.ValidatePrices(h.Prices); err != nil {
		bad("history.%v", err) // "history.prices[i] …": the entry named
	}
}

// durationInDays reads a duration written in days ("90d"), which Go's
// durations lack; others are left to StringToTimeDurationHookFunc.
func durationInDays(from, to reflect.Type, data any) (any, error) {
	if s, ok := data.(string); ok && to == reflect.TypeFor[time.Duration]() && strings.HasSuffix(s, "d") {
		d, err := history.ParseAge(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", s, err)
		}
		return d, nil
	}
	return data, nil
}
