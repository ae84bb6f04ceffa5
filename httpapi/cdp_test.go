package httpapi_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// browser is a headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: the browser reads commands on its fd 3 and
// writes answers and events on its fd 4, each a JSON message ended by a NUL
// byte), so the tests need neither a WebSocket library nor a driver. It
// drives one page, synchronously: one command at a time, events skipped.
type browser struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     *os.File      // to the browser's fd 3
	out    *bufio.Reader // from its fd 4
	outF   *os.File
	nextID int
	sess   string // the page's session
	log    strings.Builder
}

// startBrowser starts Chromium (chromium(t) finds it, or skips) with a
// fresh profile and attaches to its page; it is killed at the end of the
// test.
func startBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	bin := chromium(t)
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, in: cmdW, out: bufio.NewReaderSize(evR, 1<<20), outF: evR}
	b.cmd = exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--hide-scrollbars", "--user-data-dir="+t.TempDir(),
		"--remote-debugging-pipe", fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, evW} // fd 3, fd 4
	b.cmd.Stdout, b.cmd.Stderr = &b.log, &b.log
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers end with it
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	evW.Close()
	exited := make(chan struct{})
	go func() {
		_ = b.cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		b.in.Close()
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // the group of the process started above
		<-exited
		b.outF.Close()
	})

	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	b.call("", "Target.getTargets", nil, &targets)
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			var att struct{ SessionID string }
			b.call("", "Target.attachToTarget", map[string]any{"targetId": ti.TargetID, "flatten": true}, &att)
			b.sess = att.SessionID
			break
		}
	}
	if b.sess == "" {
		t.Fatalf("chromium has no page: %+v", targets)
	}
	b.call(b.sess, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// call sends one command and decodes its result into res (if not nil). A
// protocol error, or no answer within a minute, fails the test.
func (b *browser) call(session, method string, params any, res any) {
	b.t.Helper()
	if err := b.try(session, method, params, res); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
}

// protocolError is the browser's refusal of a command.
type protocolError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *protocolError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// navigated reports whether err says the page the command ran in went away
// under it, as it does when the command itself (a click on a submit button)
// or a navigation in flight replaces the page: the command's effect stands,
// only its answer is lost.
func navigated(err error) bool {
	var pe *protocolError
	return errors.As(err, &pe) && (strings.Contains(pe.Message, "navigated or closed") ||
		strings.Contains(pe.Message, "Cannot find context"))
}

// try is call that returns the browser's refusal instead of failing the
// test; a broken pipe or no answer within a minute still fails it.
func (b *browser) try(session, method string, params any, res any) error {
	b.t.Helper()
	b.nextID++
	id := b.nextID
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		b.t.Fatalf("%s: writing to chromium: %v\n%s", method, err, b.log.String())
	}
	_ = b.outF.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		line, err := b.out.ReadBytes(0)
		if err != nil {
			b.t.Fatalf("%s: reading from chromium: %v\n%s", method, err, b.log.String())
		}
		var reply struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *protocolError  `json:"error"`
		}
		if err := json.Unmarshal(line[:len(line)-1], &reply); err != nil {
			b.t.Fatalf("%s: %v in %q", method, err, line)
		}
		if reply.ID != id {
			continue // an event, or the answer of nothing we wait for
		}
		if reply.Error != nil {
			return reply.Error
		}
		if res != nil {
			if err := json.Unmarshal(reply.Result, res); err != nil {
				b.t.Fatalf("%s: %v in %s", method, err, reply.Result)
			}
		}
		return nil
	}
}

// eval evaluates a JavaScript expression in the page, as a person's
// DevTools console would (the page's CSP, which forbids the page any
// script, does not apply to it), and returns its value.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	v, err := b.tryEval(expr)
	if err != nil {
		b.t.Fatalf("Runtime.evaluate: %v", err)
	}
	return v
}

// tryEval is eval that returns the browser's refusal (see navigated)
// instead of failing the test; an exception in expr still fails it.
func (b *browser) tryEval(expr string) (any, error) {
	b.t.Helper()
	var res struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := b.try(b.sess, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %s: %s", expr, res.ExceptionDetails.Text)
	}
	return res.Result.Value, nil
}

// text returns the page's visible text.
func (b *browser) text() string {
	b.t.Helper()
	s, _ := b.eval("document.body ? document.body.innerText : ''").(string)
	return s
}

// navigate loads url and waits for the page to be loaded.
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.eval(`document.title = "(submitting)"`)
	b.call(b.sess, "Page.navigate", map[string]any{"url": url}, nil)
	b.waitTitle("")
}

// submit runs expr, which submits a form by clicking its button, and waits
// for the page it leads to, whose title starts with title.
func (b *browser) submit(expr, title string) {
	b.t.Helper()
	// A block: its consts do not outlive it. The click may replace the page
	// before the browser answers; the submission was made all the same.
	if _, err := b.tryEval(`document.title = "(submitting)"; {` + expr + `}`); err != nil && !navigated(err) {
		b.t.Fatalf("Runtime.evaluate: %v", err)
	}
	b.waitTitle(title)
}

// waitTitle waits up to 30 s until the page has loaded and its title
// starts with prefix.
func (b *browser) waitTitle(prefix string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := b.tryEval(`document.readyState + "|" + document.title`)
		if err != nil && !navigated(err) {
			b.t.Fatalf("Runtime.evaluate: %v", err)
		}
		state, _ := v.(string) // "" while the page is being replaced: not ready
		ready, title, _ := strings.Cut(state, "|")
		if ready == "complete" && title != "(submitting)" && strings.HasPrefix(title, prefix) {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the page never showed a title starting %q (now %q):\n%s", prefix, state, b.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenshot returns a PNG of the whole page.
func (b *browser) screenshot() []byte {
	b.t.Helper()
	var res struct{ Data string }
	b.call(b.sess, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &res)
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}
