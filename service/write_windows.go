package service

// writeFile is never reached on Windows, which has no service manager
// agentbridge knows (Manager refuses with ErrUnsupported).
func writeFile(string, []byte) error { return ErrUnsupported }
