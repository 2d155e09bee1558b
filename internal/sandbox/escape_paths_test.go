package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The escape suite's path rows: symlinks and ".." handed to the sandbox's
// file API (which the agent's tools and the graders use) and met by cwm's
// host-side walks of upper layers (Changes, Snapshot, Clone). Each row
// tries to read, list or write a host path outside the sandbox, and has a
// control that the same path is there to reach on the host.

type pathEnv struct {
	secretDir string // a host directory the attempts aim at
	secret    string // a file in it
	content   string // what the file holds
	layer     string // a lower layer of the sandbox, with planted links
}

type pathRow struct {
	name string
	// setup runs inside the sandbox first (bash).
	setup string
	// attempt tries to reach the host path; it returns what leaked
	// (empty when nothing did) or an error of the test itself.
	attempt func(ctx context.Context, s *Sandbox, e pathEnv) (leak string, err error)
	// control shows the host path the attempt aims at is reachable on the
	// host.
	control func(e pathEnv) error
}

func readControl(e pathEnv) error {
	b, err := os.ReadFile(e.secret)
	if err == nil && string(b) != e.content {
		err = fmt.Errorf("secret holds %q", b)
	}
	return err
}

func writeControl(e pathEnv) error {
	p := filepath.Join(e.secretDir, "control-write")
	defer os.Remove(p)
	return os.WriteFile(p, []byte("x"), 0o644)
}

// readLeak reads name through the file API; a read that returns the
// secret is a leak.
func readLeak(name string) func(context.Context, *Sandbox, pathEnv) (string, error) {
	return func(ctx context.Context, s *Sandbox, e pathEnv) (string, error) {
		p := strings.ReplaceAll(name, "{SECRET}", e.secret)
		b, err := s.ReadFile(ctx, p, 0)
		if err == nil && strings.Contains(string(b), e.content) {
			return fmt.Sprintf("ReadFile(%q) returned the host's secret", p), nil
		}
		return "", nil
	}
}

// writeLeak writes through name; a file appearing in the host directory
// is a leak.
func writeLeak(name string, create bool) func(context.Context, *Sandbox, pathEnv) (string, error) {
	return func(ctx context.Context, s *Sandbox, e pathEnv) (string, error) {
		p := strings.ReplaceAll(name, "{DIR}", e.secretDir)
		if create {
			s.CreateFile(ctx, p, []byte("escaped"), 0o644)
		} else {
			s.WriteFile(ctx, p, []byte("escaped"), 0o644)
		}
		ents, _ := os.ReadDir(e.secretDir)
		for _, ent := range ents {
			if ent.Name() != filepath.Base(e.secret) {
				os.Remove(filepath.Join(e.secretDir, ent.Name()))
				return fmt.Sprintf("writing %q made %s on the host", p, ent.Name()), nil
			}
		}
		return "", nil
	}
}

var pathRows = []pathRow{
	{name: "ReadFile through an absolute symlink", setup: "ln -s {SECRET} /tmp/link", attempt: readLeak("/tmp/link"), control: readControl},
	{name: "ReadFile through ..", attempt: readLeak("../../../../../..{SECRET}"), control: readControl},
	{name: "ReadFile through a symlink to /", setup: "ln -s / /tmp/root", attempt: readLeak("/tmp/root{SECRET}"), control: readControl},
	{name: "ReadFile through a relative symlink up", setup: "ln -s ../../../../../.. /tmp/up", attempt: readLeak("/tmp/up{SECRET}"), control: readControl},
	{name: "ReadFile through /proc/1/root", attempt: readLeak("/proc/1/root{SECRET}"), control: readControl},
	{name: "ReadFile through /proc/self/root", attempt: readLeak("/proc/self/root{SECRET}"), control: readControl},
	{name: "ReadFile through a layer's symlink", attempt: readLeak("/layer-link"), control: readControl},
	{name: "WriteFile through a symlinked directory", setup: "ln -s {DIR} /tmp/d", attempt: writeLeak("/tmp/d/x", false), control: writeControl},
	{name: "WriteFile through ..", attempt: writeLeak("../../../../..{DIR}/x", false), control: writeControl},
	{name: "CreateFile through a symlink up", setup: "ln -s ../../../../.. /tmp/up", attempt: writeLeak("/tmp/up{DIR}/x", true), control: writeControl},
	{name: "WriteFile over a symlink to a host file", setup: "ln -s {DIR}/x /tmp/f", attempt: writeLeak("/tmp/f", false), control: writeControl},
	{name: "Stat through a symlink", setup: "ln -s {SECRET} /tmp/link", control: readControl,
		attempt: func(ctx context.Context, s *Sandbox, e pathEnv) (string, error) {
			if st, err := s.Stat(ctx, "/tmp/link"); err == nil && st.Size == int64(len(e.content)) {
				return "Stat followed the symlink to the host file", nil
			}
			return "", nil
		}},
	{name: "a working directory of ..", control: readControl,
		attempt: func(ctx context.Context, s *Sandbox, e pathEnv) (string, error) {
			r, err := s.Exec(ctx, Cmd{Shell: "cat " + filepath.Base(e.secret) + " 2>/dev/null; pwd", Dir: "../../../../.." + e.secretDir})
			if err == nil && strings.Contains(string(r.Stdout), e.content) {
				return "a command in " + e.secretDir + " read the secret", nil
			}
			return "", nil
		}},
	{name: "Changes lists a host directory through a layer's symlink", control: func(e pathEnv) error {
		_, err := os.ReadDir(filepath.Join(e.layer, "repo", "hostdir"))
		return err
	},
		// The layer's /repo/hostdir is a symlink to the host directory;
		// replaced by an (opaque) directory inside, Changes lists what
		// the lower held there as deleted.
		setup: "cd /repo && rm hostdir && mkdir hostdir && echo y > hostdir/y",
		attempt: func(ctx context.Context, s *Sandbox, e pathEnv) (string, error) {
			ch, err := s.Changes()
			if err != nil {
				return "", err
			}
			for _, c := range ch {
				if strings.Contains(c.Path, filepath.Base(e.secret)) {
					return fmt.Sprintf("Changes lists %s, a file of the host directory", c.Path), nil
				}
			}
			return "", nil
		}},
	{name: "Snapshot copies what a symlink points to", setup: "ln -s {SECRET} /tmp/link; mkdir /tmp/d; ln -s {DIR} /tmp/d/in", control: readControl,
		attempt: func(ctx context.Context, s *Sandbox, e pathEnv) (string, error) {
			dst := filepath.Join(e.secretDir, "..", fmt.Sprintf("snap-%d", os.Getpid()))
			defer RemoveAll(dst)
			if err := s.Snapshot(dst); err != nil {
				return "", err
			}
			var leak string
			filepath.Walk(dst, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), e.content) {
						leak = "the snapshot holds the host's secret at " + p
					}
				}
				return nil
			})
			return leak, nil
		}},
	{name: "Clone copies what a symlink points to", setup: "ln -s {SECRET} /tmp/link; ln -s {DIR} /tmp/dir", control: readControl,
		attempt: func(ctx context.Context, s *Sandbox, e pathEnv) (string, error) {
			c, err := s.Clone(ctx)
			if err != nil {
				return "", err
			}
			defer c.Close()
			r, err := c.Exec(ctx, Cmd{Shell: "cat /tmp/link /tmp/dir/* 2>/dev/null; find /tmp -type f -exec cat {} +"})
			if err == nil && strings.Contains(string(r.Stdout), e.content) {
				return "the clone holds the host's secret", nil
			}
			return "", nil
		}},
}

func TestEscapePaths(t *testing.T) {
	ctx := context.Background()
	e := pathEnv{secretDir: t.TempDir(), content: "s3cret-" + randomHex(8)}
	e.secret = filepath.Join(e.secretDir, "secret")
	if err := os.WriteFile(e.secret, []byte(e.content), 0o644); err != nil {
		t.Fatal(err)
	}
	e.layer = t.TempDir()
	os.MkdirAll(filepath.Join(e.layer, "repo"), 0o755)
	os.Symlink(e.secret, filepath.Join(e.layer, "layer-link"))
	os.Symlink(e.secretDir, filepath.Join(e.layer, "repo", "hostdir"))
	rt := newRuntime(t, Options{})
	for _, r := range pathRows {
		t.Run(r.name, func(t *testing.T) {
			if err := r.control(e); err != nil {
				t.Fatalf("control: the host path is not there to reach: %v", err)
			}
			s := newSandbox(t, rt, Config{Layers: []string{e.layer}, Workdir: "/repo"})
			if r.setup != "" {
				setup := strings.NewReplacer("{SECRET}", e.secret, "{DIR}", e.secretDir).Replace(r.setup)
				if res := sh(t, s, setup); res.ExitCode != 0 {
					t.Fatalf("setup %q: %s", setup, res.Stderr)
				}
			}
			leak, err := r.attempt(ctx, s, e)
			if err != nil {
				t.Fatal(err)
			}
			if leak != "" {
				t.Error(leak)
			}
		})
	}
}
