package io.agentnest.internal.channel;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

/**
 * Every name the host and the in-sandbox agent exchange on the channel, in one place (as the MCP
 * java-sdk's {@code McpSchema} holds its method names): the operations the host asks for (the
 * {@code op} header field) and the frame types the agent answers with (the {@code ev} field).
 *
 * <p>The agent's dispatch table ({@code agent.py}, {@code OPS}) and the table in {@code
 * docs/architecture.md} must list the same names: {@code ProtocolOpsAgreementTest} compares all
 * three and names any op missing from one of them. A constant's field name starts with {@code OP_}
 * or {@code EV_}, which is how that test finds them.
 */
public final class Ops {
  /** Header field naming the operation of a host-to-agent frame. */
  public static final String OP = "op";

  /** Header field naming the type of an agent-to-host frame. */
  public static final String EV = "ev";

  // ---- host -> agent: lifecycle

  /** First frame after the bootstrap: the secret environment variables (payload JSON). */
  public static final String OP_INIT = "init";

  /** Ends the agent and its sessions. */
  public static final String OP_SHUTDOWN = "shutdown";

  /** The agent's version, pid, uid, Python version and workspace. */
  public static final String OP_HELLO = "hello";

  /** An empty round trip. */
  public static final String OP_PING = "ping";

  /** The sandbox's end of life, enforced by the agent when the host is gone. */
  public static final String OP_SET_TTL = "set_ttl";

  // ---- host -> agent: commands and Python sessions

  /** Runs a command; streams {@link #EV_OUT} frames, then {@link #EV_RESULT}. */
  public static final String OP_EXEC = "exec";

  /** Stops a running call (timeout, cancel, output cap). */
  public static final String OP_SIGNAL = "signal";

  /** Bytes typed at the terminal of an {@link #OP_EXEC} that runs on a pty ({@code target}). */
  public static final String OP_PTY_IN = "pty_in";

  /** New window size ({@code rows}, {@code cols}) of an {@link #OP_EXEC} that runs on a pty. */
  public static final String OP_PTY_RESIZE = "pty_resize";

  /** Runs code in a named Python session. */
  public static final String OP_PY = "py";

  /** The host's decision on an approval question a session asked ({@link #EV_ASK}). */
  public static final String OP_ANSWER = "answer";

  /** Closes a Python session. */
  public static final String OP_PY_CLOSE = "py_close";

  /** Streams a session's pickled namespace to the host (fork, snapshots). */
  public static final String OP_PY_DUMP = "py_dump";

  /** Starts a session's interpreter ahead of use. */
  public static final String OP_PY_WARM = "py_warm";

  /** Loads a saved namespace sent in chunked frames. */
  public static final String OP_PY_LOAD = "py_load";

  /** Loads a saved namespace from the bulk link. */
  public static final String OP_PY_LOAD_BULK = "py_load_bulk";

  /** Names of the sessions with a live interpreter. */
  public static final String OP_PY_SESSIONS = "py_sessions";

  // ---- host -> agent: files and archives

  public static final String OP_FS_READ = "fs_read";
  public static final String OP_FS_WRITE = "fs_write";
  public static final String OP_FS_STAT = "fs_stat";
  public static final String OP_FS_LIST = "fs_list";
  public static final String OP_FS_DELETE = "fs_delete";
  public static final String OP_FS_MKDIR = "fs_mkdir";

  /** Packs workspace or /tmp into a tar stream ({@link #EV_DATA} frames or the bulk link). */
  public static final String OP_TAR_OUT = "tar_out";

  /** Unpacks a tar stream into workspace or /tmp, checking every entry. */
  public static final String OP_TAR_IN = "tar_in";

  // ---- host -> agent and agent -> host: the egress tunnel (frames of no call)

  /** Starts the agent's local proxy listener. */
  public static final String OP_EGRESS_LISTEN = "egress_listen";

  /**
   * The host opened a connection to an exposed port: the agent connects to {@code 127.0.0.1:port}
   * in the sandbox and carries it as tunnel {@code tid} (negative: numbered by the host). A refused
   * connect comes back as {@link #EV_TCP_CLOSE}.
   */
  public static final String OP_PORT_OPEN = "port_open";

  public static final String OP_TCP_DATA = "tcp_data";
  public static final String OP_TCP_EOF = "tcp_eof";
  public static final String OP_TCP_ACK = "tcp_ack";
  public static final String OP_TCP_CLOSE = "tcp_close";

  // ---- agent -> host: frame types

  /** The agent is up (answers the bootstrap). */
  public static final String EV_READY = "ready";

  /** The agent's own TTL fallback fired (the host decides expiry by its own clock). */
  public static final String EV_EXPIRED = "expired";

  /** A call's final success frame. */
  public static final String EV_RESULT = "res";

  /** A call's final error frame, with {@code code} and {@code message}. */
  public static final String EV_ERROR = "err";

  /** Output of a command or session; {@code s} is {@code o} or {@code e}. */
  public static final String EV_OUT = "out";

  /** A chunk of a file, archive or session state. */
  public static final String EV_DATA = "data";

  /** A rich output (image, HTML) of a Python call. */
  public static final String EV_RICH = "rich";

  /** An approval question of a Python session. */
  public static final String EV_ASK = "ask";

  /** Sandbox code opened a connection to the local proxy port. */
  public static final String EV_TCP_OPEN = "tcp_open";

  public static final String EV_TCP_DATA = OP_TCP_DATA;
  public static final String EV_TCP_EOF = OP_TCP_EOF;
  public static final String EV_TCP_ACK = OP_TCP_ACK;
  public static final String EV_TCP_CLOSE = OP_TCP_CLOSE;

  private Ops() {}

  /** Whether a frame type belongs to the egress tunnel (routed by tunnel id, not by call id). */
  public static boolean isTunnelFrame(String ev) {
    return ev.startsWith("tcp_");
  }

  /** Every op name the host may send, sorted. */
  public static List<String> ops() {
    return constants("OP_");
  }

  /** Every frame type the agent may send (each once), sorted. */
  public static List<String> events() {
    return constants("EV_");
  }

  private static List<String> constants(String prefix) {
    List<String> out = new ArrayList<>();
    for (Field f : Ops.class.getDeclaredFields()) {
      int m = f.getModifiers();
      if (Modifier.isStatic(m) && f.getType() == String.class && f.getName().startsWith(prefix)) {
        try {
          out.add((String) f.get(null));
        } catch (IllegalAccessException e) {
          throw new IllegalStateException("cannot read Ops." + f.getName(), e);
        }
      }
    }
    return out.stream().distinct().sorted().toList();
  }
}
