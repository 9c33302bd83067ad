package gemini

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	json "github.com/go-json-experiment/json"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// Agent says which processes are Gemini CLI's: a "gemini" executable (a
// standalone build), or Node running the gemini script
// (…/bin/gemini, …/@google/gemini-cli/bundle/gemini.js). Gemini CLI
// starts itself again as a child with more memory (unless
// GEMINI_CLI_NO_RELAUNCH is set); the runtime's binder takes the child,
// the one that writes.
var Agent = proc.Agent{Names: []string{"gemini"}, Runtimes: []string{"node", "bun"}, Packages: []string{"gemini-cli"}}

// AntigravityAgent says which processes are Antigravity CLI's: its
// native binary agy, one process per conversation.
var AntigravityAgent = proc.Agent{Names: []string{"agy"}, Exact: true}

// Neither CLI names its pid on disk, and neither keeps its journal open
// (Gemini CLI appends and closes), so the runtime's binder
// (Sessions.FindProcess) finds a session's process by name, cwd and start
// time. A Gemini CLI chat's metadata names its project by projectHash,
// the SHA-256 of the working directory the CLI runs in: a Gemini CLI
// process whose cwd hashes to it, and that was running when the chat was
// last written, is its writer. An Antigravity transcript names no
// working directory; Antigravity CLI's history.jsonl (beside brain/)
// pairs a conversation with its workspace ({"conversationId",
// "workspace"}, from the conversation's second prompt on): an agy
// process in that workspace, else (not paired yet) an agy process that no
// other session has, is its process.

// projectHash is how Gemini CLI names a project: the SHA-256, in hex, of
// its working directory.
func projectHash(cwd string) string {
	sum := sha256.Sum256([]byte(cwd))
	return hex.EncodeToString(sum[:])
}

// askAntigravity asks for the process of each Antigravity session written
// since the last call.
func (h *handler) askAntigravity() {
	if len(h.asked) == 0 {
		return
	}
	var cwds map[string]string
	for _, id := range slices.Sorted(maps.Keys(h.asked)) {
		if cwds == nil {
			cwds = historyCwds(h.history)
		}
		q := sources.ProcQuery{Agent: AntigravityAgent, Wrote: h.asked[id]}
		if c := cwds[id]; c != "" {
			q.Cwd = c
			if s := h.Get(id); s != nil && s.Snapshot().Cwd == "" && !h.Exited(id) {
				// The transcript never names it: the session gets its
				// workspace from the history.
				h.Event(id, HarnessAntigravity, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: c})
			}
		} else {
			q.AnyCwd = true
		}
		h.FindProcess(id, q)
	}
	clear(h.asked)
}

// historyTail bounds how much of the end of history.jsonl is read: it
// grows with every prompt ever sent.
const historyTail = 256 << 10

// historyCwds reads the end of Antigravity CLI's history.jsonl and returns
// each conversation's latest workspace (an absolute, clean path). A file
// that is missing, not a regular file, or unreadable gives none.
func historyCwds(path string) map[string]string {
	f, err := os.OpenFile(path, os.O_RDONLY|sources.OpenFlags, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	off := max(fi.Size()-historyTail, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, historyTail))
	if err != nil {
		return nil
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // a cut first line
		}
	}
	return parseHistory(b)
}

// parseHistory maps history.jsonl lines to each conversation's latest
// workspace; lines that are not JSON objects, or lack either field, or
// name an unusable id or path, are skipped.
func parseHistory(b []byte) map[string]string {
	out := map[string]string{}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		var rec struct {
			ConversationID string `json:"conversationId"`
			Workspace      string `json:"workspace"`
		}
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &rec) != nil {
			continue
		}
		if rec.ConversationID == "" || !validate.ValidID(rec.ConversationID) || !filepath.IsAbs(rec.Workspace) {
			continue
		}
		if c := validate.CleanCwd(rec.Workspace); c != "" {
			out[rec.ConversationID] = c
		}
	}
	return out
}
