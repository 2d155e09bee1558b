// Package sandbox runs untrusted code in isolated Linux sandboxes built
// directly on kernel namespaces, overlayfs and cgroups, with no container
// runtime.
//
// A sandbox is a process tree in new user, mount, pid, ipc, uts and network
// namespaces (the network has only loopback). Its root filesystem is an
// overlay: read-only lower layers (environment layers over a base root) and a
// writable upper layer that belongs to the sandbox alone. Inside runs a small
// init (this same binary, re-executed) that mounts the filesystem, starts
// commands on request, reaps them, and kills whatever they leave behind.
//
// A Runtime owns the run-state directory ($CWM_HOME/run), detects the cgroup
// controllers, removes what a crashed cwm left behind, and keeps a few closed
// sandboxes warm for reuse. Sandboxes answer Exec (one command with captured,
// capped output), Shell (a persistent bash session), Reset, Clone, Changes and
// Close. Runtime.Run runs a single command in a one-shot sandbox without an
// init: a child sharing cwm's memory builds the sandbox from the same set-up
// plan (plan_unsafe.go) and waits for the command as its pid 1. See
// docs/sandbox.md for the isolation model and the limits.
package sandbox
