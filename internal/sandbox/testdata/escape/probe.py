"""Escape probe for cwm's sandbox tests.

Each command makes one attempt and prints one line: "ESCAPED ..." when the
attempt got through (a system call reached the kernel's own handler, a
file could be opened or read, a connection was made), "refused ..." when it
was stopped. The same command runs inside the sandbox (where it must be
refused) and on the host or in a weakened sandbox (the control, where it
must get through), so a row cannot pass because its call is malformed.

Only calls whose success is harmless are made: system calls get arguments
that make the kernel fail them after its permission checks (EINVAL, EBADF,
ENOENT) or that change nothing; files are opened for writing but never
written.
"""
import ctypes
import errno
import os
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# x86-64 system call numbers.
NR = {
    "read": 0, "personality": 135, "pivot_root": 155, "acct": 163, "settimeofday": 164,
    "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
    "sethostname": 170, "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
    "quotactl": 179, "clone": 56, "syslog": 103, "lookup_dcookie": 212, "clock_settime": 227,
    "mbind": 237, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
    "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "setns": 308, "process_vm_readv": 310, "kcmp": 312, "finit_module": 313,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsmount": 432, "fspick": 433,
    "clone3": 435, "pidfd_getfd": 438, "mount_setattr": 442,
}


def arg(a):
    if a.startswith("s:"):
        return ctypes.c_char_p(a[2:].encode())
    if a == "null":
        return ctypes.c_void_p(0)
    if a == "self":
        return ctypes.c_long(os.getpid())
    return ctypes.c_long(int(a, 0))


def sys_call(name, *args):
    r = libc.syscall(ctypes.c_long(NR[name]), *[arg(a) for a in args])
    e = ctypes.get_errno()
    if r >= 0:
        return "ESCAPED %s returned %d" % (name, r)
    if e in (errno.EPERM, errno.ENOSYS, errno.EACCES):
        return "refused %s %s" % (name, errno.errorcode[e])
    return "ESCAPED %s reached the kernel: %s" % (name, errno.errorcode.get(e, e))


def read(path):
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError as e:
        return "refused read %s: %s" % (path, errno.errorcode.get(e.errno, e))
    if not data:
        return "refused read %s: empty" % path
    return "ESCAPED read %d bytes of %s" % (len(data), path)


def open_only(path):
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as e:
        return "refused open %s: %s" % (path, errno.errorcode.get(e.errno, e))
    return "ESCAPED opened %s" % path


def write(path):
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError as e:
        return "refused open for writing %s: %s" % (path, errno.errorcode.get(e.errno, e))
    return "ESCAPED opened %s for writing" % path


def listdir(path):
    try:
        names = os.listdir(path)
    except OSError as e:
        return "refused list %s: %s" % (path, errno.errorcode.get(e.errno, e))
    if not names:
        return "refused list %s: empty" % path
    return "ESCAPED %s holds %s" % (path, ", ".join(sorted(names)[:5]))


def mknod(path, major, minor):
    try:
        os.mknod(path, 0o600 | 0o060000, os.makedev(int(major), int(minor)))
    except OSError as e:
        return "refused mknod: %s" % errno.errorcode.get(e.errno, e)
    os.unlink(path)
    return "ESCAPED made a block device"


def connect(host, port):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, int(port)))
    except OSError as e:
        return "refused connect %s:%s: %s" % (host, port, e)
    return "ESCAPED connected to %s:%s" % (host, port)


def abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + name)
    except OSError as e:
        return "refused connect @%s: %s" % (name, e)
    return "ESCAPED connected to @%s" % name


def kill(pid):
    try:
        os.kill(int(pid), 0)
    except OSError as e:
        return "refused kill %s: %s" % (pid, errno.errorcode.get(e.errno, e))
    return "ESCAPED signalled %s" % pid


def sleeper():
    child = os.fork()
    if child == 0:
        import time
        time.sleep(5)
        os._exit(0)
    return child


def proc(target, what):
    """Reads what /proc says of another process: target is a pid, or
    "child" for a child of the probe's own (the control)."""
    pid = sleeper() if target == "child" else int(target)
    d = "/proc/%d/" % pid
    if what == "mem":
        return open_only(d + "mem")
    if what == "root":
        return listdir(d + "root/")
    if what == "fdlinks":
        try:
            links = [os.readlink(d + "fd/" + n) for n in os.listdir(d + "fd")]
        except OSError as e:
            return "refused read %sfd: %s" % (d, errno.errorcode.get(e.errno, e))
        return "ESCAPED %sfd links to %s" % (d, ", ".join(links[:5]))
    return read(d + what)


PTRACE_ATTACH, PTRACE_DETACH = 16, 17


def ptrace(pid):
    pid = sleeper() if pid == "child" else int(pid)
    r = libc.ptrace(PTRACE_ATTACH, pid, None, None)
    e = ctypes.get_errno()
    if r == 0:
        os.waitpid(pid, 0)
        libc.ptrace(PTRACE_DETACH, pid, None, None)
        out = "ESCAPED attached to %d" % pid
    else:
        out = "refused ptrace %d: %s" % (pid, errno.errorcode.get(e, e))
    return out


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"sys": sys_call, "read": read, "open": open_only, "write": write, "ls": listdir,
          "mknod": mknod, "connect": connect, "abstract": abstract, "kill": kill,
          "ptrace": ptrace, "proc": proc}[cmd]
    print(fn(*args))


main()
