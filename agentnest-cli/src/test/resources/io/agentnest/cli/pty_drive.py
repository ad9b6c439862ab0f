"""Drives a program on a pseudo-terminal for the CLI's tests, as a person at a terminal would.

    python3 pty_drive.py ROWS COLS STEPS_JSON -- PROGRAM ARGS...

STEPS_JSON is a list of steps, run in order:
  {"send": TEXT}             type TEXT (UTF-8; "\\r" is Enter in raw mode)
  {"expect": TEXT, "s": N}   wait at most N seconds (default 60) until TEXT appears after the
                             previous match
  {"sleep": N}               let N seconds pass, reading the screen meanwhile
  {"resize": [ROWS, COLS]}   resize the window (the program gets SIGWINCH)
Then it waits at most 60 s for the program to exit. Everything the program printed goes to
stdout (the raw bytes); the exit status is the program's, or 99 when a step failed (named on
stderr) and 98 when the program did not exit (it is then killed). Every wait is bounded."""
import fcntl
import json
import os
import select
import signal
import struct
import sys
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main():
    rows, cols, steps = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
    program = sys.argv[sys.argv.index("--") + 1:]
    master, slave = os.openpty()
    set_size(slave, rows, cols)
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.login_tty(slave)
        os.execvp(program[0], program)
    os.close(slave)
    screen = bytearray()
    done = [False]

    def pump(seconds, until=lambda: False):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not until():
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    data = b""
                if not data:
                    done[0] = True
                    return
                screen.extend(data)
        return

    failed = None
    pos = 0
    for step in steps:
        if "send" in step:
            os.write(master, step["send"].encode("utf-8"))
        elif "expect" in step:
            want = step["expect"].encode("utf-8")
            pump(step.get("s", 60), lambda: screen.find(want, pos) >= 0 or done[0])
            at = screen.find(want, pos)
            if at < 0:
                failed = "never saw %r" % step["expect"]
                break
            pos = at + len(want)
        elif "sleep" in step:
            pump(step["sleep"])
        elif "resize" in step:
            set_size(master, *step["resize"])
    status = None
    deadline = time.monotonic() + 60
    while status is None and time.monotonic() < deadline:
        pump(0.2)
        wpid, st = os.waitpid(pid, os.WNOHANG)
        if wpid == pid:
            status = os.waitstatus_to_exitcode(st)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    pump(0.5)
    sys.stdout.buffer.write(bytes(screen))
    sys.stdout.flush()
    if failed:
        sys.stderr.write("step failed: %s\n" % failed)
        sys.exit(99)
    if status is None:
        sys.stderr.write("the program did not exit within 60 s: killed\n")
        sys.exit(98)
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
