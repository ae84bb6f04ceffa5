package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHealthCommand: "picket health" says ok (exit 0) while the server
// answers, and exits 6 (unavailable) once it is gone; without a store named
// it is a usage error and creates no picket.db.
func TestHealthCommand(t *testing.T) {
	srv := startServer(t, tempDB(t))
	if r := runPicket(t, "health", "-server", srv.url); r.code != 0 || r.stdout != "ok\n" {
		t.Fatalf("health of a live server: exit %d, stdout %q, stderr %q; want 0 and ok", r.code, r.stdout, r.stderr)
	}
	if code := srv.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if r := runPicket(t, "health", "-server", srv.url, "-timeout", "2s"); r.code != exitUnavailable {
		t.Errorf("health of a stopped server: exit %d (%s); want %d", r.code, r.stderr, exitUnavailable)
	}
	dir := t.TempDir()
	cmd := picket(t, "health")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != exitUsage {
		t.Errorf("health without a store: %v, %s; want exit %d", err, out, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultDB)); err == nil {
		t.Errorf("health without a store created %s", DefaultDB)
	}
}

// dockerfile is the container recipe, beside the command.
const dockerfile = "Dockerfile"

// TestDockerfileRecipe checks what the recipe promises without Docker: the
// final image is FROM scratch (or distroless), runs as a user that is not
// root, keeps the store in a directory volume (never the file), checks its
// health with the binary itself, and the binary the build stage makes (the
// same go build, CGO_ENABLED=0) is static and runs on its own.
func TestDockerfileRecipe(t *testing.T) {
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	final := finalStage(string(b))
	from := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindStringSubmatch(final)
	if from == nil || (from[1] != "scratch" && !strings.HasPrefix(from[1], "gcr.io/distroless/")) {
		t.Errorf("final stage FROM %v; want scratch or distroless", from)
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(final)
	if user == nil || strings.HasPrefix(user[1], "0") || strings.HasPrefix(user[1], "root") {
		t.Errorf("final stage USER %v; want a user that is not root", user)
	}
	volume := regexp.MustCompile(`(?m)^VOLUME\s+(\S+)`).FindStringSubmatch(final)
	db := regexp.MustCompile(`"-db",\s*"([^"]+)"`).FindStringSubmatch(final)
	switch {
	case volume == nil || db == nil:
		t.Errorf("final stage: VOLUME %v, -db %v; want a volume and the store in it", volume, db)
	case filepath.Dir(db[1]) != volume[1]:
		t.Errorf("the store %s is not directly in the volume %s: mount the directory, never the file", db[1], volume[1])
	}
	if !regexp.MustCompile(`(?m)^HEALTHCHECK .*\n?.*CMD \["/picket", "health"`).MatchString(final) {
		t.Errorf("final stage has no HEALTHCHECK running /picket health:\n%s", final)
	}

	build := regexp.MustCompile(`CGO_ENABLED=0 go build ([^\n]*?) -o /out/picket \.`).FindStringSubmatch(string(b))
	if build == nil {
		t.Fatalf("no \"CGO_ENABLED=0 go build ... -o /out/picket .\" in %s", dockerfile)
	}
	if testing.Short() {
		t.Skip("-short: not building the static binary (minutes on a cold cache)")
	}
	bin := filepath.Join(t.TempDir(), "picket")
	args := append([]string{"build"}, splitShell(build[1])...)
	cmd := exec.Command("go", append(args, "-o", bin, ".")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the CGO_ENABLED=0 binary asks for a dynamic loader: not static, it will not run FROM scratch")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the CGO_ENABLED=0 binary needs %v", libs)
	}
	// As in the image: no environment at all, and the health check against
	// a server that is not there is "unavailable", not a crash.
	run := exec.Command(bin, "health", "-server", "127.0.0.1:1", "-timeout", "1s")
	run.Env = []string{}
	if out, _ := run.CombinedOutput(); run.ProcessState.ExitCode() != exitUnavailable {
		t.Errorf("static picket health with nothing to reach: exit %d: %s; want %d", run.ProcessState.ExitCode(), out, exitUnavailable)
	}
}

// finalStage returns the Dockerfile's last stage, from its FROM line on.
func finalStage(df string) string {
	i := strings.LastIndex(df, "\nFROM ")
	if i < 0 {
		return df
	}
	return df[i+1:]
}

// TestContainer builds the image and runs it, where Docker works: the
// health check turns healthy, a lease is granted through the published port,
// and the token survives a new container on the same volume. Elsewhere it
// skips with the reason (PICKET_REQUIRE_DOCKER=1 makes that a failure).
func TestContainer(t *testing.T) {
	if reason := dockerMissing(); reason != "" {
		if os.Getenv("PICKET_REQUIRE_DOCKER") == "1" {
			t.Fatalf("PICKET_REQUIRE_DOCKER=1 but %s", reason)
		}
		t.Skip(reason)
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	name := "picket-test-" + hex.EncodeToString(rnd[:])
	docker(t, "build", "-q", "-f", filepath.Join("cmd", "picket", dockerfile), "-t", name, ".")
	t.Cleanup(func() { exec.Command("docker", "image", "rm", "-f", name).Run() })
	docker(t, "volume", "create", name)
	t.Cleanup(func() { exec.Command("docker", "volume", "rm", "-f", name).Run() })

	if u := strings.TrimSpace(docker(t, "image", "inspect", "-f", "{{.Config.User}}", name)); u == "" || u == "0" || strings.HasPrefix(u, "root") {
		t.Errorf("the image runs as %q; want a user that is not root", u)
	}
	tokens := make([]uint64, 2)
	for i := range tokens {
		id := strings.TrimSpace(docker(t, "run", "-d", "-p", "127.0.0.1::7070", "-v", name+":/data", name))
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				exec.Command("docker", "rm", "-f", id).Run()
			}
		}
		t.Cleanup(stop)
		deadline := time.Now().Add(90 * time.Second)
		for {
			st := strings.TrimSpace(docker(t, "inspect", "-f", "{{.State.Health.Status}}", id))
			if st == "healthy" {
				break
			}
			if time.Now().After(deadline) {
				logs, _ := exec.Command("docker", "logs", id).CombinedOutput()
				t.Fatalf("container health %q after 90s; logs:\n%s", st, logs)
			}
			time.Sleep(time.Second)
		}
		port := strings.TrimSpace(docker(t, "port", id, "7070/tcp"))
		url := "http://" + strings.Split(port, "\n")[0]
		r := runPicket(t, "acquire", "-server", url, "-name", "container/a", "-ttl", "10ms")
		if r.code != 0 {
			t.Fatalf("acquire through %s: exit %d: %s", url, r.code, r.stderr)
		}
		tokens[i] = decodeGrant(t, r).Token
		docker(t, "stop", "-t", "30", id) // SIGTERM: the store closes cleanly
		stop()
	}
	if tokens[1] <= tokens[0] {
		t.Errorf("tokens %d then %d on one volume: the second container did not go past the first's", tokens[0], tokens[1])
	}
}

// dockerMissing says why Docker cannot be used here, or "" when it can.
func dockerMissing() string {
	if _, err := exec.LookPath("docker"); err != nil {
		return "docker is not installed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "-f", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		last := ""
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				last = l
			}
		}
		return "docker has no engine to talk to: " + last
	}
	return ""
}

// docker runs a docker command and returns its output.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Dir = filepath.Join("..", "..") // the build context: the repository
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("docker %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}
