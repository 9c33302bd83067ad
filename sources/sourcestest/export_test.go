package sourcestest

// The unexported codes, for the external tests.
const (
	CodeInvalidEvent   = codeInvalidEvent
	CodePublishRefused = codePublishRefused
)
