package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIsolationFilesystem(t *testing.T) {
	home := t.TempDir()
	layer := t.TempDir()
	os.WriteFile(filepath.Join(layer, "layerfile"), []byte("original\n"), 0o644)
	secret := filepath.Join(home, "secret-in-store")
	os.WriteFile(secret, []byte("s3cret"), 0o600)
	rootSecret, err := os.CreateTemp("/root", "cwm-test-secret-")
	if err == nil {
		rootSecret.WriteString("s3cret")
		rootSecret.Close()
		defer os.Remove(rootSecret.Name())
	}
	rt := newRuntime(t, Options{Home: home})
	s := newSandbox(t, rt, Config{Layers: []string{layer}})

	// System directories are read-only; elsewhere writes land in the
	// sandbox's own upper layer.
	for _, p := range []string{"/usr/cwm-test", "/etc/cwm-test", "/usr/bin/cwm-test"} {
		if r := sh(t, s, "echo x > "+p); r.ExitCode == 0 {
			t.Errorf("writing %s succeeded inside the sandbox", p)
		}
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Fatalf("writing %s inside the sandbox reached the host", p)
		}
	}
	sh(t, s, "echo changed > /layerfile; echo x > /root/f; echo y > /tmp/g; mkdir -p /home/u && echo z > /home/u/h")
	if b, _ := os.ReadFile(filepath.Join(layer, "layerfile")); string(b) != "original\n" {
		t.Errorf("layer file on the host is %q after a write in the sandbox", b)
	}
	for _, p := range []string{"/root/f", "/tmp/g", "/home/u/h"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written in the sandbox appeared on the host", p)
		}
	}
	// Host paths outside the lowers are not there at all.
	for _, p := range []string{home, secret, "/work", filepath.Dir(s.dir)} {
		if r := sh(t, s, "ls -d "+p); r.ExitCode == 0 {
			t.Errorf("host path %s is visible in the sandbox", p)
		}
	}
	if rootSecret != nil {
		if r := sh(t, s, "cat "+rootSecret.Name()); r.ExitCode == 0 {
			t.Errorf("host file %s is readable in the sandbox", rootSecret.Name())
		}
	}
	// Escapes through the file API, "..", and symlinks stay inside.
	ctx := context.Background()
	sh(t, s, fmt.Sprintf("ln -s %s /tmp/to-secret; ln -s / /tmp/root-link; ln -s ../../../../../../.. /tmp/up", secret))
	for _, p := range []string{"/tmp/to-secret", "/tmp/root-link" + secret, "/tmp/up" + secret, "../../../../" + secret} {
		if b, err := s.ReadFile(ctx, p, 0); err == nil {
			t.Errorf("ReadFile(%q) read %q from outside the sandbox", p, b)
		}
	}
	if err := s.WriteFile(ctx, "/tmp/up/tmp/escape-test", []byte("x"), 0o644); err == nil {
		if _, err := os.Stat("/tmp/escape-test"); err == nil {
			os.Remove("/tmp/escape-test")
			t.Fatalf("WriteFile through a symlink reached the host")
		}
	}
	if r, err := s.Exec(ctx, Cmd{Shell: "pwd", Dir: "../../../.."}); err != nil || string(r.Stdout) != "/\n" {
		t.Errorf("Dir ../../../.. gives %q, %v; want /", r.Stdout, err)
	}
}

func TestIsolationProcessesAndNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{})
	r := sh(t, s, fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port))
	if r.ExitCode == 0 {
		t.Errorf("the sandbox connected to the host's 127.0.0.1:%d: %q", port, r.Stdout)
	}
	if r := sh(t, s, "timeout 2 bash -c 'exec 3<>/dev/tcp/10.255.255.1/80'"); r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "unreachable") {
		t.Errorf("connecting outside: exit %d, %q; want network unreachable", r.ExitCode, r.Stderr)
	}
	r = sh(t, s, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
	if got := strings.TrimSpace(string(r.Stdout)); got != "lo" {
		t.Errorf("network interfaces in the sandbox: %q, want only lo", got)
	}
	select {
	case <-accepted:
		t.Errorf("the host listener accepted a connection from the sandbox")
	case <-time.After(100 * time.Millisecond):
	}
	// Loopback inside works, and is the sandbox's own.
	r = sh(t, s, "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); c=socket.create_connection(s.getsockname()); print(\"ok\")'")
	if string(r.Stdout) != "ok\n" {
		t.Errorf("loopback inside the sandbox: %q %q", r.Stdout, r.Stderr)
	}

	r = sh(t, s, "ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '")
	lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	if len(lines) != 2 || lines[0] > "4" || !strings.HasPrefix(lines[1], initArg0) {
		t.Errorf("processes visible in the sandbox: %q; want init, bash and ls only", r.Stdout)
	}
	if r := sh(t, s, fmt.Sprintf("kill -0 %d", os.Getpid())); r.ExitCode == 0 && os.Getpid() > 10 {
		t.Errorf("kill -0 on the host's pid %d succeeded", os.Getpid())
	}
	// The init process cannot be tampered with.
	for _, cmd := range []string{"kill -9 1; kill -TERM 1; sleep 0.1; echo alive", "cat /proc/1/environ", "ls -l /proc/1/root/", "unshare -U true", "unshare -m true", "mount -t tmpfs x /mnt", "chroot / true"} {
		sh(t, s, cmd)
	}
	if r := sh(t, s, "echo still here"); string(r.Stdout) != "still here\n" {
		t.Errorf("sandbox broken after tampering attempts: %q", r.Stdout)
	}
	for _, cmd := range []string{"cat /proc/1/environ", "ls /proc/1/root/", "unshare -U true", "unshare -m true", "mount -t tmpfs x /mnt", "chroot / true"} {
		if r := sh(t, s, cmd); r.ExitCode == 0 {
			t.Errorf("%q succeeded in the sandbox: %q", cmd, r.Stdout)
		}
	}
}
