package text

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short ascii unchanged", "Fix tests", 200, "Fix tests"},
		{"exact fit", "abcde", 5, "abcde"},
		{"cut ascii", "abcdef", 5, "abcd…"},
		{"cut mid-word", "fix the tests", 6, "fix t…"},
		{"cut after a space drops it", "fix the tests", 5, "fix…"},
		{"newlines fold", "line one\nline two", 200, "line one line two"},
		{"crlf folds to one space", "a\r\nb", 10, "a b"},
		{"tabs and runs collapse", "a\t\t b \n\n c", 20, "a b c"},
		{"trimmed", "\n  hello world \t\n", 20, "hello world"},
		{"other controls dropped", "a\x00b\x07c\x1b[31md\u0085e\u009bf", 50, "abc[31md ef"},
		{"invalid utf8 dropped", "caf\xc3\xa9 \xff\xfeok", 20, "café ok"},
		{"multibyte cut on rune boundary", strings.Repeat("é", 10), 5, "éééé…"},
		{"cjk", "日本語のテキストです", 4, "日本語…"},
		{"emoji counts 2 UTF-16 units", "🚀🚀🚀🚀", 3, "🚀…"},
		{"emoji never split", "🚀🚀🚀🚀", 4, "🚀…"},
		{"emoji fit", "🚀🚀", 4, "🚀🚀"},
		{"max 1", "abc", 1, "…"},
		{"max 1 fits", "a", 1, "a"},
		{"max 0", "abc", 0, ""},
		{"max negative", "abc", -1, ""},
		{"max huge", "a\nb", math.MaxInt, "a b"},
		{"empty", "", 10, ""},
		{"only whitespace", " \n\t ", 10, ""},
		{"only controls", "\x00\x01", 10, ""},
		{"prompt to title", "Please fix the failing test in\n\n    ./pkg/foo_test.go\n\nthanks!", 30, "Please fix the failing test i…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Bound(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("Bound(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			checkBounded(t, tt.in, tt.max, got)
		})
	}
}

// checkBounded asserts Bound's promises on one result.
func checkBounded(tb testing.TB, in string, max int, got string) {
	tb.Helper()
	if !utf8.ValidString(got) {
		tb.Errorf("Bound(%q, %d) = %q: not valid UTF-8", in, max, got)
	}
	if n := UTF16Len(got); n > max && !(max <= 0 && n == 0) {
		tb.Errorf("Bound(%q, %d) = %q: %d UTF-16 units", in, max, got, n)
	}
	if got != "" && !Valid(got, max) {
		tb.Errorf("Bound(%q, %d) = %q: fails the display-text rule: %s", in, max, got, Problem(got, max))
	}
	if Bound(got, max) != got {
		tb.Errorf("Bound is not idempotent on %q (max %d)", got, max)
	}
}

// secret pairs a realistic text with the secret it must not keep.
type secretCase struct {
	name, in, secret, want string
}

var secretCases = []secretCase{
	{"anthropic key", "export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEf0123456789_AbCdEf0123456789-xyzXYZ012345 && claude",
		"sk-ant-api03-AbCdEf0123456789", "export ANTHROPIC_API_KEY=[redacted] && claude"},
	{"anthropic key in prose", "my key is sk-ant-api03-AbCdEf0123456789AbCdEf0123456789 ok?",
		"AbCdEf0123456789AbCdEf", "my key is [redacted] ok?"},
	{"anthropic key cut by Bound", "key sk-ant-api03-AbCdEf…", "AbCdEf", "key [redacted]…"},
	{"openai key", "use sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78 for the call",
		"sk-proj-Ab12Cd34", "use [redacted] for the call"},
	{"openai legacy key", "OPENAI=sk-1234567890abcdefghijABCDEFGHIJ1234567890abcdef",
		"1234567890abcdefghij", "OPENAI=[redacted]"},
	{"github pat classic", "git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r",
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a", ""},
	{"github fine-grained", "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWX here",
		"github_pat_11ABCDEFG", ""},
	{"github oauth", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a", "[redacted]"},
	{"aws access key id", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
		"AKIAIOSFODNN7EXAMPLE", "aws configure set aws_access_key_id [redacted]"},
	{"aws session key id", "ASIAY34FZKBOKMUTVV7A is temporary", "ASIAY34FZKBOKMUTVV7A", "[redacted] is temporary"},
	{"aws secret", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key=[redacted]"},
	{"aws secret upper", "AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY: [redacted]"},
	{"slack bot", "SLACK=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
		"xoxb-123456789012", "SLACK=[redacted]"},
	{"slack app", "xapp-1-A0123456789-1234567890123-abcdef0123456789", "A0123456789-1234567890123", "[redacted]"},
	{"google api key", "key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY in config",
		"AIzaSyD-9tSrke72PouQMnMX", "key [redacted] in config"},
	{"bearer", "curl -H 'Authorization: Bearer abcdef0123456789abcdef' https://api",
		"abcdef0123456789abcdef", "curl -H 'Authorization: [redacted]' https://api"},
	{"bearer alone", "send Bearer abcdef0123456789abcdef.xyz please",
		"abcdef0123456789abcdef", "send Bearer [redacted] please"},
	{"authorization basic", `Authorization: Basic dXNlcjpwYXNzd29yZA==`, "dXNlcjpwYXNzd29yZA", "Authorization: [redacted]"},
	{"authorization json", `{"authorization": "token abcdef0123456789"}`, "abcdef0123456789", ""},
	{"jwt", "cookie=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"eyJzdWIiOiIxMjM0NTY3ODkwIn0", ""},
	{"jwt cut", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3…", "eyJzdWIiOiIxMjM0NTY3", "[redacted]…"},
	{"private key block", "-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEA7x -----END RSA PRIVATE KEY----- done",
		"MIIEowIBAAKCAQEA7x", "[redacted] done"},
	{"openssh key multiline", "here:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
		"b3BlbnNzaC1rZXktdjEAAAAA", "here:\n[redacted]\n"},
	{"lone begin line", "paste: -----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC…",
		"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "paste: [redacted]"},
	{"password pair", "mysql -u root password=hunter2 db", "hunter2", "mysql -u root password=[redacted] db"},
	{"password quoted with space", `login with password="correct horse battery" now`, "horse", `login with password="[redacted]" now`},
	{"password json", `{"user":"bob","password":"s3cr3t!"}`, "s3cr3t!", `{"user":"bob","password":"[redacted]"}`},
	{"passwd colon", "passwd: letmein", "letmein", "passwd: [redacted]"},
	{"pwd short", "PWD=ab", "=ab", "PWD=[redacted]"},
	{"db password env", "DB_PASSWORD=Tr0ub4dor&3", "Tr0ub4dor", "DB_PASSWORD=[redacted]&3"},
	{"token pair", "GITHUB_TOKEN=abc123def456 make release", "abc123def456", "GITHUB_TOKEN=[redacted] make release"},
	{"secret pair", "client_secret: 9f8e7d6c5b4a", "9f8e7d6c5b4a", "client_secret: [redacted]"},
	{"api_key pair", "?api_key=Zm9vYmFyYmF6&x=1", "Zm9vYmFyYmF6", "?api_key=[redacted]&x=1"},
	{"apikey pair", "apikey=0123abcd", "0123abcd", "apikey=[redacted]"},
	{"access_key pair", "access_key=0123abcd9876", "0123abcd9876", "access_key=[redacted]"},
	{"cli flag", "run --token 0123456789abcdef --verbose", "0123456789abcdef", "run --token [redacted] --verbose"},
	{"url credentials", "postgres://admin:pa55w0rd@db.internal:5432/app", "pa55w0rd", "postgres://admin:[redacted]@db.internal:5432/app"},
	{"stripe live", "STRIPE=" + "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", ""},
	{"stripe restricted test", "use rk_test_" + "51H8abcdEFGHijklMNOP in ci", "51H8abcdEFGHijklMNOP", "use [redacted] in ci"},
	{"gitlab", "git clone https://x.invalid?glpat-" + "xYz12_abcDEF-34567890 done", "xYz12_abcDEF-34567890", ""},
	{"npm", "//registry.npmjs.org/:_authToken npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", ""},
	{"hugging face", "HF hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567 login", "AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "HF [redacted] login"},
	{"twilio", "key SK" + "0123456789abcdef0123456789ABCDEF and", "0123456789abcdef0123456789ABCDEF", "key [redacted] and"},
	{"digitalocean", "doctl auth init -t dop_v1_" + strings.Repeat("a1f9", 16), strings.Repeat("a1f9", 16), "doctl auth init -t [redacted]"},
	{"mysql -p", "mysql -u root -p" + "S3cr3tPw db", "S3cr3tPw", "mysql -u root -p[redacted] db"},
	{"mysqldump -p first", "mysqldump -p" + "hunter2xx --all-databases", "hunter2xx", "mysqldump -p[redacted] --all-databases"},
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tt := range secretCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Redact(tt.in)
			if strings.Contains(got, tt.secret) {
				t.Errorf("Redact(%q) = %q: still holds %q", tt.in, got, tt.secret)
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("Redact(%q) = %q: no %s marker", tt.in, got, Redacted)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Redact(got); again != got {
				t.Errorf("Redact is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestRedactLeavesOrdinaryText(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"",
		"Fix the flaky test in the parser",
		"Approve shell command",
		"ask-for-approval mode",
		"use the task-runner-for-integration-tests target",
		"max_tokens=4096 and tokens: 1200",
		"the token count is high",
		"keyboard shortcuts and monkeys",
		"password reset flow needs a test",
		"see https://example.com/docs/auth for details",
		"Asia/Tokyo time zone",
		"cd $(pwd) && make",
		"bearer of bad news",
		"Skip the sk-learn import",
		"ask the task desk about SKU-42 and skills",
		"npm_config_cache and hf_hub_download and glpat-like names",
		"sk_live_ alone and rk_test_x",
		"SKIP the SKETCH of SK1234",
		"mysql -u root -p mydb",
		"mysql --port 3306 -P 3306 db",
		"run mysql -h db.internal then grep -pattern",
		"dop_v1_ docs and do_v1 things",
		"日本語のテキスト 🚀",
	} {
		if got := Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestRedactNoAllocWhenClean(t *testing.T) {
	in := "Fix the flaky test in the parser and run the suite again"
	if n := testing.AllocsPerRun(100, func() { _ = Redact(in) }); n != 0 {
		t.Errorf("Redact on clean text allocates %.0f times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Bound(in, 200) }); n != 0 {
		t.Errorf("Bound on short clean text allocates %.0f times, want 0", n)
	}
}
