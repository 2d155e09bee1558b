// The tests of deploy/slurm run its templates on a real one-node Slurm
// cluster that they start on loopback: munged, slurmctld and slurmd from
// Debian's slurm-wlm and munge, with their own configuration, keys, state
// and logs in a temporary directory, stopped by pid at the end.
package slurm_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemons are the programs the cluster needs; tools those the tests run.
var (
	daemons = []string{"munged", "slurmctld", "slurmd"}
	tools   = []string{"sbatch", "scontrol", "sinfo", "scancel"}
)

// needCluster skips where the machine cannot run a cluster: not root
// (slurmd starts jobs as their users), or Slurm and munge not installed
// and not installable (make setup installs them: DEB_PKGS).
func needCluster(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	if os.Geteuid() != 0 {
		t.Skip("a one-node Slurm cluster needs root (slurmd runs each job as its user)")
	}
	missing := func() []string {
		var m []string
		for _, p := range append(append([]string{}, daemons...), tools...) {
			if _, err := exec.LookPath(p); err != nil {
				m = append(m, p)
			}
		}
		return m
	}
	if m := missing(); len(m) > 0 {
		installSlurm(t)
		if m = missing(); len(m) > 0 {
			t.Skipf("Slurm is not installed (%s missing) and apt-get could not install slurm-wlm and munge: make setup installs them", strings.Join(m, ", "))
		}
	}
}

var installOnce sync.Once

// installSlurm installs Debian's slurm-wlm and munge, once, within ten
// minutes; a failure is seen by the check that follows.
func installSlurm(t testing.TB) {
	installOnce.Do(func() {
		if _, err := exec.LookPath("apt-get"); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", "slurm-wlm", "munge")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("apt-get install slurm-wlm munge: %v\n%s", err, out)
		}
	})
}

// cluster is a running one-node cluster.
type cluster struct {
	dir  string
	conf string
	cpus int
	// procs are the daemons, in the order they stop.
	procs []*exec.Cmd
}

// env is what a Slurm command needs to find the cluster.
func (c *cluster) env() []string { return append(os.Environ(), "SLURM_CONF="+c.conf) }

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startCluster starts munged, slurmctld and slurmd with cpus CPUs on one
// node, and waits (a minute at most) until the node is idle.
func startCluster(t testing.TB, cpus int) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{dir: dir, conf: filepath.Join(dir, "slurm.conf"), cpus: cpus}
	for _, d := range []string{"munge-key", "munge", "state", "spool", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "munge-key"), 0o700)
	key := make([]byte, 1024)
	if f, err := os.Open("/dev/urandom"); err == nil {
		f.Read(key)
		f.Close()
	}
	keyFile := filepath.Join(dir, "munge-key", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge", "munge.socket")
	t.Cleanup(c.stop)
	c.start(t, "munged", "-F", "-f", "--key-file="+keyFile, "--socket="+sock,
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--log-file="+filepath.Join(dir, "log", "munged.log"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	waitFor(t, time.Minute, "munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })

	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	conf := fmt.Sprintf(`ClusterName=cwmtest
SlurmctldHost=%s(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%s
CredType=cred/munge
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/log/slurmctld.log
SlurmdLogFile=%s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=3600
MailProg=/bin/true
SlurmdParameters=config_overrides
NodeName=cwmnode NodeAddr=127.0.0.1 CPUs=%d RealMemory=16000 State=UNKNOWN
PartitionName=cwm Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, freePort(t), freePort(t), sock, dir, dir, dir, dir, dir, dir, cpus)
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start(t, "slurmctld", "-D", "-i", "-f", c.conf)
	c.start(t, "slurmd", "-D", "-N", "cwmnode", "-f", c.conf)
	waitFor(t, time.Minute, "the node to be idle", func() bool {
		out, _ := c.cmd("sinfo", "-h", "-o", "%T").Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
	return c
}

// start runs a daemon in the foreground, in a process group of its own,
// its output in log/NAME.out.
func (c *cluster) start(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := os.Create(filepath.Join(c.dir, "log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	out.Close()
	c.procs = append([]*exec.Cmd{cmd}, c.procs...)
}

// stop cancels what still runs, then stops slurmd, slurmctld and munged
// by their pids (SIGTERM, then SIGKILL after ten seconds).
func (c *cluster) stop() {
	if len(c.procs) == 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, "scancel", "--full", "--partition=cwm")
		cmd.Env = c.env()
		cmd.Run()
		cancel()
	}
	for _, p := range c.procs {
		syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	c.procs = nil
}

// cmd is a Slurm command on the cluster.
func (c *cluster) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.env()
	return cmd
}

// logs is the tail of the cluster's logs, for a failure's message.
func (c *cluster) logs() string {
	var b strings.Builder
	for _, f := range []string{"slurmctld.log", "slurmd.log"} {
		data, _ := os.ReadFile(filepath.Join(c.dir, "log", f))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

var stateRE = regexp.MustCompile(`JobState=(\S+)`)

// jobStates is the state of each job (and array task) of the ids.
func (c *cluster) jobStates(t testing.TB, ids ...string) []string {
	t.Helper()
	var states []string
	for _, id := range ids {
		out, err := c.cmd("scontrol", "-o", "show", "job", id).Output()
		if err != nil {
			t.Fatalf("scontrol show job %s: %v\n%s", id, err, c.logs())
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if m := stateRE.FindStringSubmatch(sc.Text()); m != nil {
				states = append(states, m[1])
			}
		}
	}
	return states
}

// wait waits until the jobs (every task of an array) have ended, within
// limit, and returns when it saw them end.
func (c *cluster) wait(t testing.TB, limit time.Duration, ids ...string) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		states := c.jobStates(t, ids...)
		over := len(states) > 0
		for _, s := range states {
			switch s {
			case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING":
				over = false
			}
		}
		if over {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs %v not over after %v: %v\n%s", ids, limit, states, c.logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitFor polls ok until it holds, within limit.
func waitFor(t testing.TB, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
