package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

// commandDocs are the pages whose ```sh and ```console blocks
// TestReadmeCommands runs: the README and the page the README's client
// commands moved to. (Other pages show commands that change the machine,
// such as `service install`, or output of a particular build.)
var commandDocs = []string{"README.md", filepath.Join("docs", "clients.md")}

// readmeMaxBytes bounds the README: one screen of what a user needs, the
// rest in docs/.
const readmeMaxBytes = 12_000

// readmeBlock is one command a page shows: a line of a ```sh block,
// or a "$ " line of a ```console block with the output shown after it.
type readmeBlock struct {
	lang   string   // "sh" or "console"
	cmds   []string // the commands, in order (an sh block runs as one script)
	output string   // console: what the page shows after the command
	file   string   // the page, relative to the repository
	line   int      // where the block starts
}

// readmeBlocks reads the sh and console blocks of a page.
func readmeBlocks(t *testing.T, file, readme string) []readmeBlock {
	t.Helper()
	var out []readmeBlock
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok || (lang != "sh" && lang != "console") {
			continue
		}
		start := i + 1
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if lang == "sh" {
			b := readmeBlock{lang: lang, file: file, line: start}
			for _, l := range body {
				if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
					b.cmds = append(b.cmds, l)
				}
			}
			out = append(out, b)
			continue
		}
		for j := 0; j < len(body); j++ {
			cmd, ok := strings.CutPrefix(body[j], "$ ")
			if !ok {
				t.Fatalf("%s line %d: a console block line without a $ command: %q", file, start+j, body[j])
			}
			b := readmeBlock{lang: lang, cmds: []string{cmd}, file: file, line: start + j}
			var shown []string
			for j+1 < len(body) && !strings.HasPrefix(body[j+1], "$ ") {
				j++
				shown = append(shown, body[j])
			}
			b.output = strings.Join(shown, "\n")
			out = append(out, b)
		}
	}
	return out
}

// shell runs script with bash in dir and env, for at most d; followers
// (a stream piped into jq) are stopped then, with their whole process
// group. It reports whether the time ran out.
func shell(t *testing.T, dir string, env []string, d time.Duration, script string) (out string, timedOut bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Second
	err = cmd.Run()
	return b.String(), ctx.Err() != nil, err
}

// TestReadmeCommands runs every command the README (and the client page,
// commandDocs) shows, verbatim, as a newcomer would: the make targets
// exist (make -n), the client commands work against `agentbridge demo`
// found without --addr, the curl lines work with an XDG_STATE_HOME of
// their own, and where a page shows output for certain (no bridge,
// validate), the output is that.
func TestReadmeCommands(t *testing.T) {
	var blocks []readmeBlock
	for _, f := range commandDocs {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		bs := readmeBlocks(t, f, string(b))
		if f == "README.md" && len(bs) < 5 {
			t.Fatalf("found %d command blocks in the README; the parser is broken", len(bs))
		}
		blocks = append(blocks, bs...)
	}
	bin := agentbridgeBin(t)
	home := t.TempDir()
	state := filepath.Join(home, "my state") // any XDG_STATE_HOME, even with a space
	env := []string{
		"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
		"HOME=" + home, "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"NO_COLOR=1",
	}
	// The client commands run in a copy of the parts of the repository they
	// touch (npm pack writes its package there).
	work := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(repoRoot, "extensions"), work).CombinedOutput(); err != nil {
		t.Fatalf("copy extensions: %v %s", err, out)
	}

	defaultFree := func() bool {
		l, err := net.Listen("tcp", "127.0.0.1:7391")
		if err != nil {
			return false
		}
		l.Close()
		return true
	}
	// What the README shows with no bridge running is true only when
	// nothing else holds the default address.
	noBridge := defaultFree()

	var demo *exec.Cmd
	startDemo := func() {
		demo = exec.Command(bin, "demo", "--speed", "10")
		demo.Env = env
		var log bytes.Buffer
		demo.Stdout, demo.Stderr = &log, &log
		if err := demo.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			demo.Process.Signal(syscall.SIGTERM)
			demo.Wait()
		})
		deadline := time.Now().Add(15 * time.Second)
		for {
			cmd := exec.Command(bin, "sessions", "--json")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err == nil && bytes.Contains(out, []byte(`"example"`)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the demo's sessions never showed: %v %s\ndemo log:\n%s", err, out, log.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// What a client says with no bridge is shown before the demo starts,
	// wherever the README shows it.
	rank := func(b readmeBlock) int {
		if strings.Contains(b.output, "no agentbridge at") {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(blocks, func(a, b readmeBlock) int { return rank(a) - rank(b) })
	sawDefault := false
	for _, blk := range blocks {
		script := strings.Join(blk.cmds, "\n")
		name := strings.TrimSpace(blk.cmds[0])
		t.Run(name, func(t *testing.T) {
			if strings.HasPrefix(name, "make ") {
				for _, c := range blk.cmds {
					target := strings.Fields(c)[1]
					cmd := exec.Command("make", "-n", target)
					cmd.Dir = repoRoot
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Errorf("%s line %d: make %s: %v %s", blk.file, blk.line, target, err, out)
					}
				}
				return
			}
			if blk.output != "" && strings.Contains(blk.output, "no agentbridge at") {
				// Shown before any bridge runs.
				sawDefault = sawDefault || blk.file == "README.md"
				if !noBridge || demo != nil {
					testenv.Missing(t, "something else listens at 127.0.0.1:7391")
				}
				out, _, _ := shell(t, work, env, 10*time.Second, script)
				if strings.TrimSpace(out) != blk.output {
					t.Errorf("%s line %d: %s printed\n%s\nwant\n%s", blk.file, blk.line, name, out, blk.output)
				}
				return
			}
			if demo == nil {
				startDemo()
			}
			uses7391 := strings.Contains(script, "127.0.0.1:7391")
			if uses7391 && !noBridge {
				testenv.Missing(t, "the demo could not take 127.0.0.1:7391, which this command names")
			}
			if strings.HasPrefix(name, "cd extensions/terminay") {
				if _, err := exec.LookPath("npm"); err != nil {
					testenv.Missing(t, "no npm")
				}
			}
			out, timedOut, err := shell(t, work, env, 6*time.Second, script)
			switch {
			case blk.lang == "console" && strings.HasPrefix(name, "echo "):
				// A check offline: the README shows its output exactly.
				if strings.TrimSpace(out) != blk.output {
					t.Errorf("%s line %d: %s printed\n%s\nwant\n%s", blk.file, blk.line, name, out, blk.output)
				}
			case timedOut:
				// A command that follows the stream: it must still have been
				// running, without complaint.
				if strings.Contains(out, "agentbridge") && strings.Contains(out, ": ") && !strings.Contains(out, `"id"`) {
					t.Errorf("%s line %d: %s complained:\n%s", blk.file, blk.line, name, out)
				}
			case err != nil:
				t.Errorf("%s line %d: %s: %v\n%s", blk.file, blk.line, name, err, out)
			case blk.lang == "console":
				header := strings.Fields(strings.SplitN(blk.output, "\n", 2)[0])
				first := strings.Fields(strings.SplitN(out, "\n", 2)[0])
				if strings.TrimSpace(out) != "no sessions" && !slices.Equal(header, first) {
					t.Errorf("%s line %d: %s printed\n%s\nwant a table like\n%s", blk.file, blk.line, name, out, blk.output)
				}
			}
			if strings.Contains(script, "curl") && !timedOut && !strings.Contains(out, `"revision"`) {
				t.Errorf("%s line %d: the curl lines got no sessions:\n%s", blk.file, blk.line, out)
			}
		})
	}
	if !sawDefault {
		t.Error("the README no longer shows what a client says when no bridge runs; update this test")
	}
}

// TestReadmeInlineCommands: the agentbridge commands the README and the
// pages under docs/ name in running text exist with the flags they give
// them (each accepts --help).
func TestReadmeInlineCommands(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin := agentbridgeBin(t)
	span := regexp.MustCompile("`((?:bin/)?agentbridge(?: [a-z][a-z-]*)+(?: --?[a-z][a-z-]*(?:=[a-z0-9]+)?)*)`")
	seen := map[string]bool{}
	inReadme := 0
	for _, path := range append([]string{filepath.Join(repoRoot, "README.md")}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, path)
		for _, m := range span.FindAllStringSubmatch(string(b), -1) {
			if name == "README.md" {
				inReadme++
			}
			if seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			args := append(strings.Fields(m[1])[1:], "--help")
			cmd := exec.Command(bin, args...)
			cmd.Env = []string{"HOME=" + t.TempDir()}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("%s mentions `%s`, but `%s` fails: %v\n%s", name, m[1], strings.Join(args, " "), err, out.String())
			}
		}
	}
	if inReadme < 5 {
		t.Errorf("found only %d inline commands in the README; the pattern is broken", inReadme)
	}
}

// TestReadmeFirstScreen: the README stays one screen of what a user
// needs (under readmeMaxBytes), and a newcomer's first screen of it says
// how to install, run, test and demo.
func TestReadmeFirstScreen(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= readmeMaxBytes {
		t.Errorf("README.md is %d bytes; keep it under %d and move the rest to docs/", len(b), readmeMaxBytes)
	}
	const screen = 60 // lines
	lines := strings.SplitN(string(b), "\n", screen+1)
	first := strings.Join(lines[:min(len(lines), screen)], "\n")
	for _, cmd := range []string{"make install", "make run", "make test", "make demo"} {
		if !strings.Contains(first, cmd) {
			t.Errorf("the README's first %d lines do not say %q", screen, cmd)
		}
	}
}
