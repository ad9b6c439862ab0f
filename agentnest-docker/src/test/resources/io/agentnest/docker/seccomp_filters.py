# Prints the seccomp filters installed on a process as JSON: [[[code, jt, jf, k], ...], ...].
#   python3 seccomp_filters.py PID
# Runs on the host as root (PTRACE_SECCOMP_GET_FILTER needs CAP_SYS_ADMIN). The process is
# stopped only for the copy (PTRACE_SEIZE + PTRACE_INTERRUPT) and detached again.
import ctypes
import errno
import json
import os
import struct
import sys

PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
PTRACE_SECCOMP_GET_FILTER = 0x420C
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
pid = int(sys.argv[1])


def ptrace(req, addr=0, data=None):
    r = libc.ptrace(req, pid, addr, data)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, "ptrace(0x%x) on pid %d: %s" % (req, pid, os.strerror(e)))
    return r


ptrace(PTRACE_SEIZE)
filters = []
try:
    ptrace(PTRACE_INTERRUPT)
    os.waitpid(pid, WALL)
    for index in range(64):
        try:
            n = ptrace(PTRACE_SECCOMP_GET_FILTER, index)
        except OSError as e:
            if e.errno == errno.ENOENT:
                break
            raise
        buf = ctypes.create_string_buffer(8 * n)
        ptrace(PTRACE_SECCOMP_GET_FILTER, index, ctypes.cast(buf, ctypes.c_void_p))
        filters.append([list(struct.unpack_from("<HBBI", buf.raw, 8 * i)) for i in range(n)])
finally:
    ptrace(PTRACE_DETACH)
print(json.dumps(filters))
