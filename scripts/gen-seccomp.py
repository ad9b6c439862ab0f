#!/usr/bin/env python3
"""Generates AgentNest's seccomp profile (an allowlist, stricter than Docker's default).

Denied compared with Docker's default: io_uring_*, keyctl/add_key/request_key, userfaultfd, bpf,
ptrace, perf_event_open, process_vm_readv/writev, unshare/setns/clone with namespace flags,
mount APIs, kernel module and kexec calls, open_by_handle_at, personality changes other than
the harmless ones. clone3 returns ENOSYS so libc falls back to clone, where flags can be checked.

Only the native ABI is listed (x86_64, or aarch64). A system call through another ABI the kernel
serves to the same process (i386 through `int 0x80`, x32, arm32) does not match the filter's
architecture, and runc's libseccomp answers it with its "bad architecture" action: the thread is
killed with SIGSYS. Listing those ABIs would let them in under rules written for 64-bit numbers
and arguments: i386's socketcall(2) and ipc(2) multiplex many calls behind one number whose real
arguments sit in memory, where seccomp cannot look (socketcall reached AF_VSOCK and AF_NETLINK).
For the same reason socketcall and ipc are not allowed on any ABI.

Also denied because they let code in the sandbox act as the agent, which runs as the same uid:
pidfd_getfd (take another process's file descriptors) and pidfd_open (answered ENOSYS, so
libraries fall back to waitpid), process_madvise; and ptrace, process_vm_readv/writev as above.
"""
import json
import sys

ALLOWED = """
accept accept4 access adjtimex alarm arch_prctl bind brk capget capset chdir chmod chown chown32
clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime clock_gettime64
clock_nanosleep clock_nanosleep_time64 close close_range connect copy_file_range creat dup dup2
dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait
epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat faccessat2 fadvise64
fadvise64_64 fallocate fchdir fchmod fchmodat fchmodat2 fchown fchown32 fchownat fcntl fcntl64
fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs
fstatfs64 fsync ftruncate ftruncate64 futex futex_time64 futex_waitv futimesat getcpu getcwd
getdents getdents64 getegid getegid32 geteuid geteuid32 getgid getgid32 getgroups getgroups32
getitimer getpeername getpgid getpgrp getpid getppid getpriority getrandom getresgid getresgid32
getresuid getresuid32 getrlimit get_robust_list getrusage getsid getsockname getsockopt
get_thread_area gettid gettimeofday getuid getuid32 getxattr get_mempolicy inotify_add_watch
inotify_init inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy io_getevents
io_pgetevents io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit kill landlock_add_rule
landlock_create_ruleset landlock_restrict_self lchown lchown32 lgetxattr link linkat listen
listxattr llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64 madvise mbind membarrier
memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2
mprotect mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend
mq_timedsend_time64 mq_unlink mremap msgctl msgget msgrcv msgsnd msync munlock munlockall munmap
name_to_handle_at nanosleep newfstatat _newselect open openat openat2 pause
pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll ppoll_time64 prctl
pread64 preadv preadv2 prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64 pwritev pwritev2
read readahead readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg
remap_file_pages removexattr rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction
rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait
rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_getaffinity sched_getattr sched_getparam
sched_get_priority_max sched_get_priority_min sched_getscheduler sched_rr_get_interval
sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam sched_setscheduler
sched_yield seccomp select semctl semget semop semtimedop semtimedop_time64 send sendfile
sendfile64 sendmmsg sendmsg sendto setfsgid setfsgid32 setfsuid setfsuid32 setgid setgid32
setgroups setgroups32 setitimer setpgid setpriority setregid setregid32 setresgid setresgid32
setresuid setresuid32 setreuid setreuid32 setrlimit set_robust_list setsid setsockopt
set_thread_area set_tid_address setuid setuid32 setxattr set_mempolicy shmat shmctl shmdt shmget shutdown
sigaltstack signalfd signalfd4 sigprocmask sigreturn socketpair splice stat stat64 statfs
statfs64 statx symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create
timer_delete timer_getoverrun timer_gettime timer_gettime64 timer_settime timer_settime64
timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime timerfd_settime64 times tkill
truncate truncate64 ugetrlimit umask uname unlink unlinkat utime utimensat utimensat_time64
utimes vfork vmsplice wait4 waitid waitpid write writev
""".split()

# Never allowed, whatever the list above says (checked below, and by SeccompProfileTest).
DENIED = """
socketcall ipc pidfd_getfd pidfd_open process_madvise process_vm_readv process_vm_writev ptrace
io_uring_setup io_uring_enter io_uring_register keyctl add_key request_key userfaultfd bpf
perf_event_open unshare setns mount fsopen fsmount move_mount open_tree init_module finit_module
delete_module kexec_load kexec_file_load open_by_handle_at reboot
""".split()
assert not set(ALLOWED) & set(DENIED), sorted(set(ALLOWED) & set(DENIED))

# Address families a sandbox may open sockets for: unix, inet, inet6 (only loopback exists).
SOCKET_FAMILIES = [1, 2, 10]
NS_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

profile = {
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 1,
    # Native ABIs only: see the module docstring for why the compat ABIs must stay out.
    "archMap": [
        {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": []},
        {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": []},
    ],
    "syscalls": [{"names": sorted(set(ALLOWED)), "action": "SCMP_ACT_ALLOW"}]
    + [
        {
            "names": ["personality"],
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": v, "op": "SCMP_CMP_EQ"}],
        }
        for v in (0, 8, 131072, 131080, 4294967295)
    ]
    + [
        {
            "names": ["socket"],
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": fam, "op": "SCMP_CMP_EQ"}],
        }
        for fam in SOCKET_FAMILIES
    ]
    + [
        {
            "names": ["clone"],
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": NS_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
            "comment": "clone without namespace flags (x86_64 and arm64 put flags in arg 0)",
        },
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "comment": "ENOSYS: libc falls back to clone"},
        {
            "names": ["pidfd_open", "pidfd_getfd"],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": 38,
            "comment": "ENOSYS: code must not take the agent's fds; libraries fall back to waitpid",
        },
        {
            "names": ["io_uring_setup", "io_uring_enter", "io_uring_register"],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": 38,
            "comment": "ENOSYS so runtimes fall back to epoll",
        },
    ],
}

json.dump(profile, sys.stdout, indent=1)
sys.stdout.write("\n")
