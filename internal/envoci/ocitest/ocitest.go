// Package ocitest runs a real OCI registry for tests: Debian's
// docker-registry, which is the CNCF Distribution registry, on 127.0.0.1
// with its own configuration and storage in a temporary directory,
// optionally behind htpasswd authentication, stopped by its pid when the
// test ends. Tests that need it skip, saying so, where it is not
// installed (make setup installs it).
package ocitest

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// Registry is a running registry.
type Registry struct {
	// Host is its address, 127.0.0.1:PORT: references are Host/repo:tag.
	Host string
	// Dir is its storage directory.
	Dir string
	// DockerConfig is a directory whose config.json holds the
	// credentials of the registry's user (empty without authentication):
	// set DOCKER_CONFIG to it.
	DockerConfig string
	cmd          *exec.Cmd
}

// Binary is the registry's program, or "" when it is not installed.
func Binary() string {
	p, err := exec.LookPath("docker-registry")
	if err != nil {
		return ""
	}
	return p
}

// Start runs a registry for the test. With a user and password, it asks
// every client for them (htpasswd, bcrypt; htpasswd from apache2-utils
// writes the file).
func Start(t testing.TB, user, password string) *Registry {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("docker-registry (Debian's CNCF Distribution registry) is not installed: make setup installs it")
	}
	dir := t.TempDir()
	r := &Registry{Dir: filepath.Join(dir, "storage")}
	auth := ""
	if user != "" {
		htpasswd, err := exec.LookPath("htpasswd")
		if err != nil {
			t.Skip("htpasswd (apache2-utils) is not installed: make setup installs it")
		}
		out, err := exec.Command(htpasswd, "-Bbn", user, password).Output()
		if err != nil {
			t.Fatalf("htpasswd: %v", err)
		}
		pw := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(pw, out, 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: cwm-test\n    path: %s\n", pw)
		r.DockerConfig = filepath.Join(dir, "docker")
	}
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: 127.0.0.1:0
  secret: cwm-test
%s`, r.Dir, auth)
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	r.cmd = cmd
	t.Cleanup(r.stop)
	addr := make(chan string, 1)
	go func() {
		// Reads the log to its end (the registry's exit), so the registry
		// never blocks on a full pipe.
		re := regexp.MustCompile(`listening on (127\.0\.0\.1:[0-9]+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case r.Host = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("docker-registry did not say where it listens within 30s")
	}
	if user != "" {
		r.writeDockerConfig(t, user, password)
	}
	// Ready when /v2/ answers (401 with authentication).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Host+"/v2/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("docker-registry at %s did not answer: %v", r.Host, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r
}

func (r *Registry) writeDockerConfig(t testing.TB, user, password string) {
	t.Helper()
	if err := os.MkdirAll(r.DockerConfig, 0o700); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	data := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, r.Host, auth)
	if err := os.WriteFile(filepath.Join(r.DockerConfig, "config.json"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// stop ends the registry by its pid (its process group), and waits.
func (r *Registry) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
