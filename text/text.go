// Package text is the bridge's text toolkit: what every source, the hub
// and the command line do to text from an agent's records before it is
// shown or published. It imports only the standard library.
//
//   - Bound folds spaces, drops control characters and cuts text to a
//     limit in UTF-16 code units, as the Terminay host counts them
//     (UTF16Len); Valid and Problem are the display-text rule its result
//     passes.
//   - Redact replaces credentials; Display (and Name) turn a record's text
//     into display text: redacted, paths shortened (ShortenPaths), bounded.
//   - ContainsPath is the same path grammar as ShortenPaths, for the rule
//     that a diagnostic carries no path.
//   - Printable and EscapeJSON make text safe to print to a terminal.
//
// The limits themselves (a title's 512 characters, …) are the contract's:
// package validate states them and the helpers that apply them to a
// snapshot's fields.
package text

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bound is the bounded-text helper: it folds newlines and tabs to spaces,
// drops other control characters and invalid UTF-8, and cuts s to at most
// max characters (UTF-16 code units, as the host counts) on a character
// boundary, never splitting a surrogate pair, ending with "…" when it cut.
// Producers use it on display text before publishing; identity values are
// never bounded (they are rejected instead).
//
// In detail: a run of spaces, line breaks, tabs, vertical tabs, form feeds,
// NEL and U+2028/U+2029 becomes one space; other control characters (Unicode Cc)
// and bytes that are not UTF-8 are dropped; leading and trailing spaces are
// trimmed. Characters are UTF-16 code units (a character outside the BMP,
// such as most emoji, counts 2), and the result, "…" included, has at
// most max of them (none when max ≤ 0). The result may be
// empty; producers omit an empty field rather than publish it. The result
// always passes the display-text rule (Valid) when it is not empty.
func Bound(s string, max int) string {
	if max <= 0 {
		return ""
	}
	if fastBounded(s, max) {
		return s
	}
	var b strings.Builder
	grow := len(s)
	if max < grow/4 { // never max*4 for a huge max: it would overflow
		grow = max*4 + ellipsisLen
	}
	b.Grow(grow)
	n := 0 // runes written
	pendingSpace := false
	cut := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			continue
		case r == ' ' || isFoldedSpace(r):
			pendingSpace = n > 0
			continue
		case unicode.IsControl(r):
			continue
		}
		need := utf16Len(r)
		if pendingSpace {
			need++
		}
		if n+need > max {
			cut = true
			break
		}
		if pendingSpace {
			b.WriteByte(' ')
			n++
			pendingSpace = false
		}
		b.WriteRune(r)
		n += utf16Len(r)
	}
	if !cut {
		return b.String()
	}
	// Make room for "…": drop runes from the end until n ≤ max-1, then drop
	// a trailing space so the ellipsis sits against the last word.
	out := b.String()
	for n > max-1 {
		r, size := utf8.DecodeLastRuneInString(out)
		out = out[:len(out)-size]
		n -= utf16Len(r)
	}
	out = strings.TrimRight(out, " ")
	return out + ellipsis
}

// UTF16Len returns the length of s in UTF-16 code units, as JavaScript's
// string.length counts it: 2 for a character outside the BMP, 1 for any
// other (an invalid byte, which JavaScript never sees, counts 1).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Len(r)
	}
	return n
}

// Problem says what is wrong with display text s bounded to max
// characters (UTF-16 units), or "" when nothing is.
func Problem(s string, max int) string {
	if s == "" {
		return "must not be empty"
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return "must be valid UTF-8"
		}
		if unicode.IsControl(r) {
			return "must not contain control characters (newlines, tabs, …); shorten it with the bounded-text helper"
		}
		n += utf16Len(r)
		i += size
	}
	if n > max {
		return fmt.Sprintf("must be at most %d characters (UTF-16 code units); shorten it with the bounded-text helper", max)
	}
	return ""
}

// Valid reports whether s is display text of at most max characters
// (UTF-16 units): non-empty, valid UTF-8, no control characters.
func Valid(s string, max int) bool { return Problem(s, max) == "" }

// utf16Len is how many UTF-16 code units r takes: 2 outside the BMP.
func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

const (
	ellipsis    = "…"
	ellipsisLen = len(ellipsis)
)

// fastBounded reports whether s is printable ASCII without leading,
// trailing or doubled spaces and at most max bytes: Bound returns it as is.
func fastBounded(s string, max int) bool {
	if len(s) > max {
		return false
	}
	if len(s) > 0 && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == ' ' && s[i+1] == ' ' {
			return false
		}
	}
	return true
}

func isFoldedSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// Redacted is what Redact puts in place of a credential.
const Redacted = "[redacted]"

type redaction struct {
	triggers []string // lower-case ASCII words, one of which every match holds
	re       *regexp.Regexp
	repl     string
}

func rule(triggers, re, repl string) redaction {
	return redaction{strings.Fields(triggers), regexp.MustCompile(re), repl}
}

// redactions run in this order; each keeps what names the secret (a key,
// "Bearer ", "Authorization: ") and replaces the secret itself. A rule
// runs only when the text holds one of its trigger words, so text without
// any costs one scan and no allocation.
var redactions = []redaction{
	// Private-key blocks, whole or cut (a lone BEGIN line takes the rest).
	rule("-----begin", `-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-*(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-*|\z)`, Redacted),
	// Authorization headers, with or without a scheme.
	rule("authorization", `(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token|digest|negotiate|bot)\s+)?[^\s"',;]+`, "${1}"+Redacted),
	// Bearer tokens.
	rule("bearer", `(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}`, "${1}"+Redacted),
	// JWTs (header.payload[.signature]).
	rule("eyj", `\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?`, Redacted),
	// Anthropic (sk-ant-…) and OpenAI (sk-…, sk-proj-…) keys.
	// A prefixed key is caught even when cut short by Bound.
	rule("sk-", `\bsk-(?:(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{4,}|[A-Za-z0-9_-]{20,})`, Redacted),
	// GitHub tokens.
	rule("ghp_ gho_ ghu_ ghs_ ghr_ github_pat_", `\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`, Redacted),
	// AWS access key ids.
	rule("akia asia abia acca", `\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{12,}\b`, Redacted),
	// Slack tokens.
	rule("xox xapp-", `\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{8,}`, Redacted),
	// Google API keys.
	rule("aiza", `\bAIza[0-9A-Za-z_-]{30,}`, Redacted),
	// Stripe secret and restricted keys (live and test).
	rule("sk_live_ sk_test_ rk_live_ rk_test_", `\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}`, Redacted),
	// GitLab personal, project and group access tokens.
	rule("glpat-", `\bglpat-[A-Za-z0-9_-]{16,}`, Redacted),
	// npm access tokens.
	rule("npm_", `\bnpm_[A-Za-z0-9]{30,}`, Redacted),
	// Hugging Face tokens.
	rule("hf_", `\bhf_[A-Za-z0-9]{30,}`, Redacted),
	// Twilio API key SIDs: SK and 32 hex digits.
	rule("sk", `\bSK[0-9a-fA-F]{32}\b`, Redacted),
	// DigitalOcean personal, OAuth and refresh tokens.
	rule("dop_v1_ doo_v1_ dor_v1_", `\bdo[por]_v1_[a-f0-9]{20,}`, Redacted),
	// mysql -pSECRET among the command's options (the password glued to
	// -p; a lone -p prompts).
	rule("mysql", `(\bmysql(?:dump|admin|sh|import|check|slap)?(?:\s+-\S*(?:\s+[^\s-]\S*)?)*?\s+-p)[^\s'"]\S*`, "${1}"+Redacted),
	// password=…, pwd: …, "passwd": "…" (any value; quotes are kept).
	rule("pass pwd", `(?i)(\b(?:[a-z0-9]+[_.-])*(?:password|passwd|passphrase|pwd)["']?\s*[:=]\s*)(?:(")[^"]*"?|(')[^']*'?|[^\s"',;&})>]+)`, "${1}${2}${3}"+Redacted+"${2}${3}"),
	// token=…, secret=…, api_key=…, aws_secret_access_key=… (values of 4+).
	rule("token secret key credential", `(?i)(\b(?:[a-z0-9]+[_.-])*(?:token|secret|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|credentials?)["']?\s*[:=]\s*)(?:(")[^"]{4,}"?|(')[^']{4,}'?|[^\s"',;&})>]{4,})`, "${1}${2}${3}"+Redacted+"${2}${3}"),
	// --password xyz, --token xyz.
	rule("--", `(?i)(--(?:password|passwd|pass|token|secret|api-key|api_key|apikey|access-key|auth-token|client-secret)\s+)[^\s-]\S*`, "${1}"+Redacted),
	// Credentials in URLs: scheme://user:secret@host.
	rule("://", `(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@`, "${1}"+Redacted+"@"),
}

// trigger is one word of a rule, indexed by its first byte.
type trigger struct {
	word  string
	rules uint32 // bit i: redactions[i]
}

var triggersByFirst = func() (t [256][]trigger) {
	for i, r := range redactions {
		for _, w := range r.triggers {
			t[w[0]] = append(t[w[0]], trigger{w, 1 << i})
		}
	}
	return t
}()

// Redact replaces text that looks like a credential (API keys of Anthropic,
// OpenAI, GitHub, GitLab, AWS, Slack, Google, Stripe, npm, Hugging Face,
// Twilio, DigitalOcean; mysql -p passwords; bearer tokens and Authorization
// values; JWTs; private-key blocks; password=/token=/secret=/api_key= pairs,
// whose key is kept; credentials in URLs) with "[redacted]". Text with
// nothing that could start a credential is returned as is, without
// allocating; Redact is idempotent.
func Redact(s string) string {
	rules := triggered(s)
	if rules == 0 {
		return s
	}
	for i, r := range redactions {
		// MatchString first: a trigger word alone (the "sk" of "task")
		// must not cost ReplaceAllString's copy.
		if rules&(1<<i) != 0 && r.re.MatchString(s) {
			s = r.re.ReplaceAllString(s, r.repl)
		}
	}
	return s
}

// triggered is Redact's cheap pre-check: one pass over s that returns the
// set of rules whose trigger words (ASCII, case-insensitive) s holds.
func triggered(s string) uint32 {
	var rules uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		for _, t := range triggersByFirst[c] {
			if rules&t.rules == 0 && hasPrefixFold(s[i:], t.word) {
				rules |= t.rules
			}
		}
	}
	return rules
}

// mayHoldSecret reports whether Redact could change s.
func mayHoldSecret(s string) bool { return triggered(s) != 0 }

// hasPrefixFold reports whether s starts with the lower-case ASCII word w,
// ignoring ASCII case.
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}
