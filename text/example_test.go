package text_test

import (
	"fmt"

	"github.com/agentbridge/agentbridge/text"
)

func ExampleBound() {
	prompt := "Please fix the failing test\n\nin the parser package, then run it again"
	fmt.Println(text.Bound(prompt, 40))
	// Output: Please fix the failing test in the pars…
}

func ExampleRedact() {
	fmt.Println(text.Redact("retry with ANTHROPIC_API_KEY=sk-ant-api03-AbCdEf0123456789AbCdEf0123456789"))
	fmt.Println(text.Redact(`curl -H "Authorization: Bearer abcdef0123456789"`))
	// Output:
	// retry with ANTHROPIC_API_KEY=[redacted]
	// curl -H "Authorization: [redacted]"
}
