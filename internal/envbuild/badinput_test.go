package envbuild

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"cwm/internal/egress"
	"cwm/internal/egress/indextest"
	"cwm/internal/env"
)

// TestBadInputRecovers: each bad input of an online or wheelhouse build
// fails with what names the step and the cause (an error, an unusable
// environment's reason, or a missing dependency the build reports);
// nothing of the build is left running, nothing is
// written outside CWM_HOME (TMPDIR stays empty, the repository as it
// was); then the same build with the cause fixed is usable in the same
// CWM_HOME. Base inputs (no Python, a corrupted layer) are tested in
// internal/basebuild and internal/cli (see docs/environments.md).
func TestBadInputRecovers(t *testing.T) {
	good := indextest.Wheel{Name: "cwmdep", Version: "1.0"}
	// A build backend that calls home while it builds (its build fails
	// when the call does), beside the clean one.
	callsHome := "import urllib.request\n\nurllib.request.urlopen('https://calls-home.invalid/').read()\n\n" + cwmBackend
	ix := indextest.Start(t, good, indextest.Wheel{Name: "cwmextra", Version: "1.0"},
		indextest.Wheel{Name: "cwmhome", Version: "1.0", Module: callsHome}, indextest.Wheel{Name: "cwmbackend", Version: "0.3", Module: cwmBackend})
	// An index serving other bytes under the same file name: what a
	// tampered mirror or a changed index gives a --locked build.
	evil := indextest.Start(t, indextest.Wheel{Name: "cwmdep", Version: "1.0", Module: "__version__ = '1.0'\nEVIL = True\n"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there: an unreachable index
	online := func(t *testing.T, o *Options, index *indextest.Index, url string) {
		o.Mode, o.ExcludeNewer = env.ModeOnline, "none"
		if url != "" {
			index = &indextest.Index{URL: url, Addr: closed}
		}
		o.Egress = indexPolicy(t, index)
	}
	backend := func(name string) string {
		return "[build-system]\nrequires = [\"" + name + "\"]\nbuild-backend = \"" + name + "\"\n\n" +
			"[project]\nname = \"cwmproj\"\nversion = \"0.1\"\ndependencies = [\"cwmdep\"]\n"
	}
	pyproject := func(requires string) string {
		return "[project]\nname = \"cwmproj\"\nversion = \"1\"\nrequires-python = \"" + requires + "\"\n"
	}
	tests := []struct {
		name string
		// files is the repository; broken and fixed set up a build.
		files         map[string]string
		broken, fixed func(t *testing.T, o *Options, home string)
		// wantErr or wantReason name the step and the cause.
		wantErr, wantReason []string
	}{{
		name:       "an unreachable index",
		files:      map[string]string{"requirements.txt": "cwmdep\n"},
		broken:     func(t *testing.T, o *Options, _ string) { online(t, o, nil, "http://"+closed+"/simple") },
		fixed:      func(t *testing.T, o *Options, _ string) { online(t, o, ix, "") },
		wantReason: []string{"install step partly failed: pip install -r requirements.txt", "egress could not reach: " + closed},
	}, {
		name: "a requirement that does not exist",
		files: map[string]string{"requirements.txt": "cwmdep\ncwmextra==9.9\n",
			"test_extra.py": "import unittest\n\nimport cwmextra\n\n\nclass TestExtra(unittest.TestCase):\n" +
				"    def test_version(self):\n        self.assertEqual(cwmextra.__version__, \"1.0\")\n"},
		broken: func(t *testing.T, o *Options, _ string) { online(t, o, ix, "") },
		fixed: func(t *testing.T, o *Options, _ string) {
			online(t, o, ix, "")
			fixRequirements(t, o, "cwmdep\ncwmextra\n")
		},
		wantReason: []string{"missing dependency: cwmextra"},
	}, {
		name:  "a VCS requirement the relay does not allow",
		files: map[string]string{"requirements.txt": "cwmdep @ git+https://vcs.invalid/cwmdep.git\n"},
		broken: func(t *testing.T, o *Options, _ string) {
			online(t, o, ix, "")
		},
		fixed:      func(t *testing.T, o *Options, _ string) { online(t, o, ix, ""); fixRequirements(t, o, "cwmdep\n") },
		wantReason: []string{"install step failed: pip install -r requirements.txt", "vcs.invalid"},
	}, {
		name:  "a build that calls a host off the allowlist",
		files: map[string]string{"pyproject.toml": backend("cwmhome"), "cwmproj.py": "X = 1\n"},
		broken: func(t *testing.T, o *Options, _ string) {
			online(t, o, ix, "")
			o.Install = []string{"pip install -e ."}
		},
		fixed: func(t *testing.T, o *Options, _ string) {
			online(t, o, ix, "")
			if err := os.WriteFile(filepath.Join(o.Source, "pyproject.toml"), []byte(backend("cwmbackend")), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		wantReason: []string{"install step failed: pip install -e .", "egress refused: calls-home.invalid:443 (not on the allowlist)"},
	}, {
		name:  "an allowed index name that resolves to loopback",
		files: map[string]string{"requirements.txt": "cwmdep\n"},
		broken: func(t *testing.T, o *Options, _ string) {
			online(t, o, ix, "")
			_, port, _ := net.SplitHostPort(ix.Addr)
			p := egress.Policy{IndexURL: "http://index.test:" + port + "/simple",
				Resolve: func(context.Context, string) ([]netip.Addr, error) {
					return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
				}}
			p.Allow(egress.Host{Name: "index.test", Ports: []int{mustAtoi(t, port)}})
			o.Egress = &p
		},
		fixed:      func(t *testing.T, o *Options, _ string) { online(t, o, ix, "") },
		wantReason: []string{"install step partly failed: pip install -r requirements.txt", "egress refused: index.test:"},
	}, {
		name:  "a tampered wheel under --locked",
		files: map[string]string{"requirements.txt": "cwmdep\n"},
		broken: func(t *testing.T, o *Options, home string) {
			online(t, o, ix, "")
			first := *o
			first.Home = t.TempDir() // the lock's build; the locked one's cache stays empty
			o.Lock = mustBuild(t, first).Lock
			online(t, o, evil, "")
		},
		fixed:   func(t *testing.T, o *Options, _ string) { online(t, o, ix, "") },
		wantErr: []string{"the lock's cwmdep==1.0 does not match its hash: ", "/files/cwmdep-1.0-py3-none-any.whl has sha256 "},
	}, {
		name:  "a wheelhouse missing a wheel",
		files: map[string]string{"requirements.txt": "cwmdep\n"},
		broken: func(t *testing.T, o *Options, _ string) {
			o.Wheelhouse, _ = writeWheels(t, indextest.Wheel{Name: "cwmextra", Version: "1.0"})
		},
		fixed: func(t *testing.T, o *Options, _ string) {
			o.Wheelhouse, _ = writeWheels(t, indextest.Wheel{Name: "cwmextra", Version: "1.0"}, good)
		},
		wantReason: []string{"missing dependencies: cwmdep"},
	}, {
		name:  "a requires-python no base satisfies",
		files: map[string]string{"pyproject.toml": pyproject(">=3.99"), "requirements.txt": "cwmdep\n"},
		broken: func(t *testing.T, o *Options, _ string) {
			online(t, o, ix, "")
		},
		fixed: func(t *testing.T, o *Options, _ string) {
			online(t, o, ix, "")
			if err := os.WriteFile(filepath.Join(o.Source, "pyproject.toml"), []byte(pyproject(">=3.8")), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		wantErr: []string{`requires-python ">=3.99": no base offers an allowed Python`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			files := map[string]string{"test_dep.py": "import unittest\n\nimport cwmdep\n\n\nclass TestDep(unittest.TestCase):\n" +
				"    def test_version(self):\n        self.assertEqual(cwmdep.__version__, \"1.0\")\n"}
			for k, v := range tt.files {
				files[k] = v
			}
			home := t.TempDir()
			o := onlineOpts(t, writeTree(t, files))
			o.Home = home
			tt.broken(t, &o, home)
			before := digest(t, o.Source)
			e, err := Build(context.Background(), testSandboxes, o)
			switch {
			case tt.wantErr != nil && err == nil:
				t.Errorf("Build = usable %v, want an error naming %q", e.Usable, tt.wantErr)
			case tt.wantErr != nil:
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Build = %v, want it to say %q", err, w)
					}
				}
			case err != nil:
				t.Fatalf("Build = %v, want an unusable environment whose reason names %q", err, tt.wantReason)
			default:
				// What the build says: an unusable one's reason, and the
				// missing dependencies (a usable one's too).
				said := e.Reason
				for _, m := range e.Missing {
					said += "; missing dependency: " + m.String()
				}
				for _, w := range tt.wantReason {
					if !strings.Contains(said, w) {
						t.Errorf("Build says %q, want it to say %q", said, w)
					}
				}
			}
			if err != nil {
				t.Logf("error: %v", err)
			} else {
				t.Logf("reason: %s; missing: %v", e.Reason, e.Missing)
			}
			if left := waitNoBuildProcesses(); len(left) > 0 {
				t.Errorf("left running after the build: %v", left)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
				t.Errorf("the build wrote %d entries into TMPDIR (%s), outside CWM_HOME", len(ents), ents[0].Name())
			}
			if digest(t, o.Source) != before {
				t.Errorf("the build changed the repository %s", o.Source)
			}

			fixed := o
			tt.fixed(t, &fixed, home)
			again := mustBuild(t, fixed)
			if !again.Usable {
				t.Errorf("Build after the fix = unusable: %s", again.Reason)
			}
			for _, m := range again.Missing {
				if strings.HasPrefix(m.String(), "cwm") { // the test's own packages
					t.Errorf("Build after the fix: missing dependency %s", m)
				}
			}
		})
	}
}

// fixRequirements rewrites the repository's requirements file.
func fixRequirements(t *testing.T, o *Options, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(o.Source, "requirements.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitNoBuildProcesses waits (a bounded number of checks, until none is
// left) for the processes under this test process that run a build's
// tools or venv to be gone, and returns those still there: a sandbox's
// processes are killed as it closes, which another process may reap a
// moment later.
func waitNoBuildProcesses() []string {
	var left []string
	for i := 0; i < 100; i++ {
		left = buildProcesses()
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

func buildProcesses() []string {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	self := os.Getpid()
	var out []string
	for pid := range parent {
		under := false
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == self {
				under = true
				break
			}
		}
		if !under {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		c := strings.ReplaceAll(string(cmd), "\x00", " ")
		if strings.Contains(c, toolsRoot) || strings.Contains(c, env.VenvRoot+"/bin") {
			out = append(out, strconv.Itoa(pid)+": "+c)
		}
	}
	return out
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
