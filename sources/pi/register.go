package pi

import (
	"path/filepath"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

func init() {
	sources.Register(sources.Registration{
		Info:        (&Source{}).Info(),
		HomeEnv:     EnvHome,
		DefaultHome: sources.HomeUnder(".pi", "agent"),
		New: func(o sources.Options) hub.Source {
			return New(Config{SessionsDir: sessionsDir(o.Home, o.Getenv), Window: o.Window, Linger: o.Linger, Logger: o.Logger})
		},
	})
}

// sessionsDir is $PI_CODING_AGENT_SESSION_DIR when it is absolute (Pi's
// own order: the variable wins over the home), else home/sessions.
func sessionsDir(home string, getenv func(string) string) string {
	if d := getenv(EnvSessions); d != "" && filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return SessionsDir(home)
}
