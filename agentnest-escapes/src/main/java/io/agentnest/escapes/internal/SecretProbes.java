package io.agentnest.escapes.internal;

import static io.agentnest.escapes.internal.Judges.leak;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import java.util.Map;

/** Secrets, judged by the host: every way code can try to get a secret out past redaction. */
final class SecretProbes {
  private SecretProbes() {}

  static void addTo(ProbeList p) {
    p.add(
        "secrets.environment",
        "print a secret environment variable",
        Map.of(),
        ctx -> leak(ctx, ctx.target.exec("echo \"$" + ProbeContext.SECRET_VAR + "\"; env")));
    p.add(
        "secrets.proc1-environ",
        "read the secret from /proc/1/environ and every process's environ",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.exec(
                    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null; done")));
    p.add(
        "secrets.encoded",
        "print the secret base64- (every alignment), hex- and URL-encoded",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, base64, binascii, urllib.parse\n"
                        + "s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "'].encode()\n"
                        + "for pre in (b'', b'a', b'ab'):\n"
                        + "    print(base64.b64encode(pre + s).decode())\n"
                        + "    print(base64.urlsafe_b64encode(pre + s).decode())\n"
                        + "print(binascii.hexlify(s).decode()); print(binascii.hexlify(s).decode().upper())\n"
                        + "print(urllib.parse.quote(s)); print(urllib.parse.quote_plus(s))\n")));
    p.add(
        "secrets.hex-dumps",
        "print the secret as hex dumps print it: od -An -tx1 (wrapped at 16 bytes a line, at every"
            + " start on a line) and hex with ':', '-', ' ' separators in either case",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, subprocess\n"
                        + "s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "'].encode()\n"
                        + "for pad in range(16):\n"
                        + "    print(subprocess.run(['od', '-An', '-tx1'], input=b'x' * pad + s,"
                        + " capture_output=True).stdout.decode(), end='')\n"
                        + "for sep in (':', '-', ' '):\n"
                        + "    h = sep.join('%02x' % b for b in s)\n"
                        + "    print(h); print(h.upper())\n")));
    p.add(
        "secrets.split-writes",
        "print the secret in pieces across flushes and streams",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, sys, time\n"
                        + "s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "']\n"
                        + "for i in range(1, len(s)):\n"
                        + "    sys.stdout.write(s[:i]); sys.stdout.flush(); time.sleep(0.002)\n"
                        + "    sys.stdout.write(s[i:] + '\\n'); sys.stdout.flush()\n"
                        + "sys.stderr.write(s[:5]); sys.stderr.flush(); sys.stderr.write(s[5:] + '\\n')\n")));
    p.add(
        "secrets.errors-and-results",
        "return the secret as a value, an exception message and a traceback",
        Map.of(),
        ctx -> {
          ExecResult a =
              ctx.target.runCode("import os\nos.environ['" + ProbeContext.SECRET_VAR + "']");
          ExecResult b =
              ctx.target.runCode(
                  "import os\nraise ValueError(os.environ['" + ProbeContext.SECRET_VAR + "'])");
          return leak(ctx, a).or(leak(ctx, b).through(), "exception: " + leak(ctx, b).detail());
        });
    p.add(
        "secrets.shell-tricks",
        "leak the secret through the shell: xtrace, printf %q, a file read back with cat, reversed twice",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.exec(
                    "set -x; X=\"$"
                        + ProbeContext.SECRET_VAR
                        + "\"; printf '%q\\n' \"$X\"; echo \"$X\" > /tmp/s; cat /tmp/s; echo \"$X\" | rev | rev")));
    p.add(
        "secrets.wrapped-base64",
        "print the secret base64-encoded and wrapped into 76-column lines, the line break at every"
            + " position of the secret's encoding",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, base64, subprocess\n"
                        + "s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "'].encode()\n"
                        + "for pad in range(58):\n"
                        + "    print(base64.encodebytes(b'x' * pad + s).decode(), end='')\n"
                        + "print(subprocess.run(['base64'], input=b'y' * 40 + s,"
                        + " capture_output=True).stdout.decode())\n")));
    p.add(
        "secrets.split-streams",
        "print one part of the secret to stdout and the rest to stderr, at several split points"
            + " and in both orders",
        Map.of(),
        ctx -> {
          StringBuilder merged = new StringBuilder();
          ExecResult r =
              ctx.target.runCode(
                  "import os, sys, time\n"
                      + "s = os.environ['"
                      + ProbeContext.SECRET_VAR
                      + "']\n"
                      + "for k in (1, 4, len(s) // 2, len(s) - 1):\n"
                      + "    for a, b in ((sys.stdout, sys.stderr), (sys.stderr, sys.stdout)):\n"
                      + "        a.write(s[:k]); a.flush(); time.sleep(0.01)\n"
                      + "        b.write(s[k:]); b.flush(); time.sleep(0.01)\n",
                  ExecOptions.builder().onOutput(c -> merged.append(c.text())).build());
          return leak(ctx, r, merged.toString());
        });
    p.add(
        "secrets.rich-output",
        "return the secret inside a binary rich output (a PNG whose bytes hold it, raw and hex)",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, binascii\n"
                        + "class Picture:\n"
                        + "    def _repr_png_(self):\n"
                        + "        s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "'].encode()\n"
                        + "        return b'\\x89PNG\\r\\n\\x1a\\n' + s + b'\\x00' +"
                        + " binascii.hexlify(s)\n"
                        + "Picture()")));
  }
}
