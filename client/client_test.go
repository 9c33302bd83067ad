package client_test

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/client"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestDialAddr(t *testing.T) {
	tests := []struct {
		listen, want string
		wantErr      bool
	}{
		{"127.0.0.1:7391", "127.0.0.1:7391", false},
		{"localhost:8000", "localhost:8000", false},
		{":7391", "127.0.0.1:7391", false},
		{"0.0.0.0:7391", "127.0.0.1:7391", false},
		{"[::]:7391", "[::1]:7391", false},
		{"[::1]:7391", "[::1]:7391", false},
		{"127.0.0.1:0", "", true},
		{"127.0.0.1", "", true},
		{"127.0.0.1:http", "", true},
	}
	for _, tt := range tests {
		got, err := client.DialAddr(tt.listen)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("client.DialAddr(%q) = %q, %v; want %q, error %v", tt.listen, got, err, tt.want, tt.wantErr)
		}
	}
}
