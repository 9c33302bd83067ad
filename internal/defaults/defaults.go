// Package defaults fills in the zero or negative fields of an options
// struct, the one way every package of the module does it.
//
// It sits below every other package of the module and imports nothing of
// it.
package defaults

import "cmp"

// Positive sets *v to def when *v is zero or negative (not set, or set to
// nothing usable), and leaves it alone otherwise.
func Positive[T cmp.Ordered](v *T, def T) {
	var zero T
	if *v <= zero {
		*v = def
	}
}
