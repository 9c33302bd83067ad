package live

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// answerWay is how an answering scenario answers the permission prompt
// (hooks installed with --answer, the bridge with answering on).
type answerWay string

const (
	apiAllow     answerWay = "api allow"      // POST …/answer allow: the tool runs, no key pressed
	apiDeny      answerWay = "api deny"       // POST …/answer deny: not run, the reason reaches the model
	terminalWins answerWay = "terminal first" // answered at the terminal: the API's answer gets 409
	bridgeKilled answerWay = "bridge killed"  // the bridge dies while the hook waits: the agent's own prompt decides
	notAnswering answerWay = "bridge off"     // hooks --answer, the bridge without answering: nothing waits
)

var answerWays = []answerWay{apiAllow, apiDeny, terminalWins, bridgeKilled, notAnswering}

// denyReason is what the deny scenarios tell the agent; the model's script
// answers the request that carries it.
const denyReason = "Not today, says the live suite"

// answerable is the entry's answerable, as the answer route reads it.
type answerable struct {
	WaitID  string `json:"waitId"`
	Tool    string `json:"tool"`
	Request string `json:"request"`
	Since   int64  `json:"since"`
	Until   int64  `json:"until"`
}

// entryAnswerable reads a session's entry once: its answerable, nil when
// none.
func (b *bridge) entryAnswerable(source, id string) *answerable {
	req, _ := http.NewRequest(http.MethodGet, b.base+"/v1/sessions/"+source+"/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var e struct {
		Answerable *answerable `json:"answerable"`
	}
	json.NewDecoder(res.Body).Decode(&e)
	return e.Answerable
}

// answerable waits, on the bridge's stream, for the session to be waiting
// with an answerable entry (the entry is read again at each change of the
// stream, never on a clock); nil after timeout.
func (b *bridge) answerable(source, id string, timeout time.Duration) *answerable {
	var x *answerable
	if err := b.await(timeout, func() bool {
		s, ok := b.Session(source, id)
		if !ok || s.Status != "waiting" {
			return false
		}
		x = b.entryAnswerable(source, id)
		return x != nil
	}); err != nil {
		return nil
	}
	return x
}

// answer posts an answer; it returns the status and the body.
func (b *bridge) answer(source, id, waitID, decision, message string) (int, string) {
	body, _ := json.Marshal(map[string]string{"decision": decision, "message": message})
	req, _ := http.NewRequest(http.MethodPost, b.base+"/v1/sessions/"+source+"/"+id+"/waits/"+waitID+"/answer", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b2, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b2)
}

// kill ends the bridge with SIGKILL (its follower first, so that the
// stream's end is not a failure).
func (b *bridge) kill() {
	if b.cancel != nil {
		b.cancel()
	}
	b.cmd.Process.Kill()
	<-b.done
}

// auditLines returns the bridge's audit log of answers.
func auditLines(home string) []string {
	b, _ := os.ReadFile(filepath.Join(home, ".local", "state", "agentbridge", "answers.jsonl"))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// answered is one answering scenario on a CLI's prompt: the rig's
// terminal, bridge, model and the dialog's text.
type answered struct {
	source, home, dialog, approveKey, marker string
	b                                        *bridge
	term                                     *terminal
	model                                    *modelServer
	checkf                                   func(bool, string, ...any)
	// held: the agent draws its own dialog only once the hook has ended
	held bool
}

// run answers the prompt of session id the way w says and checks what the
// user would see.
func (a answered) run(t *testing.T, id string, w answerWay) {
	t.Helper()
	if w == notAnswering {
		// the hook asks to wait, the bridge holds nothing: the dialog is
		// the agent's at once, and the entry is never answerable
		a.term.AwaitScreen(30*time.Second, a.dialog)
		a.b.AwaitStatus(a.source, id, "waiting", 10*time.Second)
		if x := a.b.entryAnswerable(a.source, id); x != nil {
			t.Errorf("answerable with answering off: %+v", x)
		}
		press(a.term, a.approveKey, a.dialog)
		a.term.AwaitScreen(60*time.Second, "Finished with the file.")
		_, err := os.Stat(a.marker)
		a.checkf(err == nil, "approved at the terminal: marker %v", err)
		return
	}
	x := a.b.answerable(a.source, id, 60*time.Second)
	if x == nil {
		t.Fatalf("the prompt never became answerable\n%s", a.b.waits(a.source))
	}
	s := a.b.AwaitStatus(a.source, id, "waiting", 10*time.Second)
	a.checkf(x.Tool == "Bash" && strings.Contains(x.Request, "touch") && strings.Contains(x.Request, "marker"), "answerable %+v", x)
	t.Logf("answerable %+v; waitingFor %q; the hook waits %d s", x, s.WaitingFor, (x.Until-x.Since)/1000)
	// the agent's own dialog while the hook waits: Claude Code draws it
	// as it runs the hook; Codex only once the hook has ended
	_, _, screen, onScreen := screenClock(a.term, 3*time.Second, func(x string) bool { return strings.Contains(x, a.dialog) })
	t.Logf("the agent's own dialog while the hook waits: on screen %v", onScreen)
	a.checkf(onScreen != a.held, "dialog on screen %v while the hook waits, want %v:\n%s", onScreen, !a.held, screen)
	switch w {
	case apiAllow:
		code, body := a.b.answer(a.source, id, x.WaitID, "allow", "")
		a.checkf(code == 200, "answer allow: %d %s", code, body)
		a.term.AwaitScreen(60*time.Second, "Finished with the file.")
		_, err := os.Stat(a.marker)
		a.checkf(err == nil, "allowed through the bridge: marker %v", err)
		code, body = a.b.answer(a.source, id, x.WaitID, "deny", "")
		a.checkf(code == 409 && strings.Contains(body, `"state":"answered"`), "a second answer: %d %s", code, body)
	case apiDeny:
		code, body := a.b.answer(a.source, id, x.WaitID, "deny", denyReason)
		a.checkf(code == 200, "answer deny: %d %s", code, body)
		a.term.AwaitScreen(60*time.Second, "Understood, I will not run it.")
		_, err := os.Stat(a.marker)
		a.checkf(os.IsNotExist(err), "denied through the bridge: marker %v", err)
	case terminalWins:
		if a.held {
			// the agent shows its dialog only once the hook gives up
			a.term.AwaitScreen(time.Duration(x.Until-time.Now().UnixMilli())*time.Millisecond+30*time.Second, a.dialog)
		}
		press(a.term, a.approveKey, a.dialog)
		a.term.AwaitScreen(60*time.Second, "Finished with the file.")
		_, err := os.Stat(a.marker)
		a.checkf(err == nil, "approved at the terminal: marker %v", err)
		code, body := a.b.answer(a.source, id, x.WaitID, "allow", "")
		a.checkf(code == 409, "an answer after the terminal's: %d %s", code, body)
		t.Logf("the API's answer after the terminal's: %d %s", code, strings.TrimSpace(body))
	case bridgeKilled:
		killed := time.Now()
		a.b.kill()
		at, _, screen, ok := screenClock(a.term, 30*time.Second, func(x string) bool { return strings.Contains(x, a.dialog) })
		a.checkf(ok, "the agent's own dialog after the bridge died:\n%s", screen)
		back := max(at.Sub(killed), 0)
		t.Logf("the agent's own dialog on screen %v after the bridge was killed", back.Round(time.Millisecond))
		a.checkf(back < 3*time.Second, "the dialog came back %v after the bridge died (documented: within a second)", back)
		press(a.term, a.approveKey, a.dialog)
		a.term.AwaitScreen(60*time.Second, "Finished with the file.")
		return // the bridge is gone: no audit
	}
	lines := auditLines(a.home)
	a.checkf(len(lines) >= 1 && strings.Contains(lines[0], `"waitId":"`+x.WaitID+`"`), "audit log: %q", lines)
}

// script is the model's: a command that needs approval, then the answer
// to its result, or to the deny reason.
func answerScript(m *modelServer, call *ToolCall, result string) {
	m.Script(
		Step{Text: "I will create the file.", Tool: call},
		Step{When: denyReason, Text: "Understood, I will not run it."},
		Step{When: result, Text: "Finished with the file."},
	)
}

func answerBridgeEnv(w answerWay) []string {
	if w == notAnswering {
		return nil
	}
	return []string{"AGENTBRIDGE_HOOKS_ANSWER=true"}
}

// claudeAnswered: Claude Code asks to run a Bash command; its prompt is
// answered as w says.
func claudeAnswered(t *testing.T, c agentCLI, w answerWay) {
	r := newClaudeRig(t, c, answerBridgeEnv(w)...)
	out := installHooksWith(t, r.home, "claude-code", []string{"--answer"}, "CLAUDE_CONFIG_DIR="+r.config)
	r.checkf(strings.Contains(out, "settings.json"), "hooks install --answer: %s", out)
	marker := filepath.Join(r.cwd, "marker")
	answerScript(r.model, &ToolCall{Name: "Bash", Input: map[string]any{"command": "touch " + marker, "description": "Create the marker file"}}, "tool_result")
	term := openTerminal(t, r.cwd, append(r.env(), hookEnv(r.bridge)...), r.bin, "--permission-mode", "default")
	term.AwaitScreen(60*time.Second, "? for shortcuts")
	pid := term.PID()
	s := r.session(30*time.Second, func(s snapshot) bool { return s.PID == pid })
	prompt(term, "make the marker")
	answered{source: claudeSource, home: r.home, dialog: "Do you want to proceed?", approveKey: "1", marker: marker,
		b: r.bridge, term: term, model: r.model, checkf: r.checkf}.run(t, s.ID, w)
}

// codexAnswered: Codex asks to run a command outside its sandbox; its
// prompt is answered as w says.
func codexAnswered(t *testing.T, c agentCLI, daemon bool, w answerWay) {
	r := newCodexRig(t, c, daemon, answerBridgeEnv(w)...)
	out := installHooksWith(t, r.home, "codex", []string{"--answer"}, "CODEX_HOME="+r.codex)
	r.checkf(strings.Contains(out, "hooks.json"), "hooks install --answer: %s", out)
	marker := filepath.Join(r.home, "outside-marker")
	answerScript(r.model, escalatedTouch(marker), "function_call_output")
	term := r.openHooked(t, daemon)
	prompt(term, "make the marker")
	s := r.session(60*time.Second, func(s snapshot) bool { return true })
	answered{source: codexSource, home: r.home, dialog: "Would you like to run", approveKey: "y", marker: marker,
		b: r.bridge, term: term, model: r.model, checkf: r.checkf, held: true}.run(t, s.ID, w)
}
