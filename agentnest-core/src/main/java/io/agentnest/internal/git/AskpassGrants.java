package io.agentnest.internal.git;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.DaemonThreads;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The host's side of git's askpass helper. A git operation that may need credentials {@linkplain
 * #open opens} a grant: a fresh random nonce, the remote's scheme, host and port, the user and the
 * secret. Git's helper asks with the nonce and git's prompt ({@code Password for 'https://x@host':
 * }); the host answers only while the grant is open (the operation runs), only when the prompt
 * names the grant's remote, at most {@link #MAX_ANSWERS} times, and audits every question ({@code
 * git.credential}, never the value). Sandbox code can send the same question: what it cannot know
 * is an open grant's nonce, except by reading git's environment during the operation (see
 * docs/git.md).
 */
public final class AskpassGrants {
  /** Username and password, twice over (a redirect or a retry within one operation). */
  static final int MAX_ANSWERS = 4;

  /** Refused questions audited one by one per sandbox; later ones are counted, not recorded. */
  static final int MAX_REFUSALS_AUDITED = 64;

  private static final Pattern PROMPT =
      Pattern.compile("(Username|Password) for '([A-Za-z][A-Za-z0-9+.-]*)://([^'/]*)[^']*': ?");
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final ExecutorService ANSWERS = DaemonThreads.pool("agentnest-askpass");

  private final @Nullable AgentChannel channel;
  private final BiConsumer<String, Map<String, ?>> audit;
  private final @Nullable Budget budget;
  private final Runnable overBudget;
  private final Map<String, Grant> open = new ConcurrentHashMap<>();
  private final AtomicInteger refusals = new AtomicInteger();
  private final AtomicInteger pending = new AtomicInteger();

  /**
   * Answers the questions {@code channel} carries (null: only {@link #decide}, for tests). Each
   * question takes a token of {@code budget} (the sandbox's budget of questions, shared with
   * approval questions); one that keeps pressing past it runs {@code overBudget}.
   */
  public AskpassGrants(
      @Nullable AgentChannel channel,
      BiConsumer<String, Map<String, ?>> audit,
      @Nullable Budget budget,
      Runnable overBudget) {
    this.channel = channel;
    this.audit = audit;
    this.budget = budget;
    this.overBudget = overBudget;
    if (channel != null) {
      channel.onAskpass(this::onQuestion);
    }
  }

  /** What one operation may be given, for as long as it runs. */
  public final class Grant implements AutoCloseable {
    private final String nonce;
    private final String scheme;
    private final String host;
    private final int port;
    private final String user;
    private final Secret secret;
    private final AtomicInteger left = new AtomicInteger(MAX_ANSWERS);

    private Grant(URI remote, String user, Secret secret) {
      byte[] b = new byte[16];
      RANDOM.nextBytes(b);
      this.nonce = HexFormat.of().formatHex(b);
      this.scheme = remote.getScheme().toLowerCase(Locale.ROOT);
      this.host = remote.getHost().toLowerCase(Locale.ROOT);
      this.port = portOf(scheme, remote.getPort());
      this.user = user;
      this.secret = secret;
    }

    public String nonce() {
      return nonce;
    }

    /** The operation ended: the nonce is worth nothing from now on. */
    @Override
    public void close() {
      open.remove(nonce, this);
    }
  }

  /** Opens a grant for one operation against {@code remote}; close it when the operation ends. */
  public Grant open(URI remote, String user, Secret secret) {
    Grant g = new Grant(remote, user, secret);
    open.put(g.nonce, g);
    return g;
  }

  /** The answer to one question: the value to give git, or why not. */
  record Decision(@Nullable String value, String asked, String host, @Nullable String refusal) {}

  /** Decides a question; counts the answer against its grant. */
  Decision decide(String nonce, String prompt) {
    Matcher m = PROMPT.matcher(prompt);
    String asked = "other";
    String host = "";
    if (m.matches()) {
      asked = m.group(1).toLowerCase(Locale.ROOT);
      host = m.group(3);
    }
    Grant g = null;
    for (Grant candidate : open.values()) {
      // Compared in constant time: the nonce is the only thing sandbox code must not guess.
      if (MessageDigest.isEqual(
          candidate.nonce.getBytes(StandardCharsets.US_ASCII),
          nonce.getBytes(StandardCharsets.US_ASCII))) {
        g = candidate;
      }
    }
    if (g == null) {
      return new Decision(null, asked, host, "no git operation of the host is asking now");
    }
    if (!m.matches()) {
      return new Decision(null, asked, host, "not a username or password prompt of git");
    }
    String userInPrompt = null;
    String hostPort = host;
    int at = host.lastIndexOf('@');
    if (at >= 0) {
      userInPrompt = host.substring(0, at);
      hostPort = host.substring(at + 1);
    }
    URI named;
    try {
      named = URI.create(m.group(2).toLowerCase(Locale.ROOT) + "://" + hostPort);
    } catch (IllegalArgumentException e) {
      return new Decision(null, asked, host, "the prompt names no host");
    }
    String scheme = m.group(2).toLowerCase(Locale.ROOT);
    String h = named.getHost() == null ? "" : named.getHost().toLowerCase(Locale.ROOT);
    if (!scheme.equals(g.scheme)
        || !h.equals(g.host)
        || portOf(scheme, named.getPort()) != g.port) {
      return new Decision(
          null, asked, host, "the operation's credentials are for " + g.host + ", not this host");
    }
    if (asked.equals("password") && userInPrompt != null && !userInPrompt.equals(g.user)) {
      return new Decision(null, asked, host, "the prompt names another user");
    }
    if (g.left.getAndDecrement() <= 0) {
      return new Decision(null, asked, host, "the operation asked more often than it may");
    }
    String value = asked.equals("username") ? g.user : g.secret.reveal();
    if (value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0) {
      // Git's credential protocol is line-based: such a value would be read as more fields
      // (Secret refuses these already; this keeps it so should that change).
      return new Decision(null, asked, host, "the credential contains a line break or NUL");
    }
    return new Decision(value, asked, host, null);
  }

  private static int portOf(String scheme, int port) {
    if (port > 0) {
      return port;
    }
    return scheme.equals("http") ? 80 : 443;
  }

  private void onQuestion(Frame f) {
    // Off the channel's reader: answering writes to the channel.
    if (pending.incrementAndGet() > 16) {
      pending.decrementAndGet();
      return;
    }
    try {
      ANSWERS.execute(
          () -> {
            try {
              answer(f.header());
            } finally {
              pending.decrementAndGet();
            }
          });
    } catch (RejectedExecutionException e) {
      pending.decrementAndGet();
    }
  }

  private void answer(JsonNode h) {
    long aid = h.path("aid").asLong(0);
    if (aid <= 0 || channel == null) {
      return;
    }
    Budget b = budget;
    if (b != null) {
      Budget.Decision bd = b.take();
      if (bd != Budget.Decision.ADMIT) {
        // The budget records its own limit.hit; this answer is not audited one by one.
        send(
            Json.object()
                .put(Ops.OP, Ops.OP_ASKPASS_REPLY)
                .put("aid", aid)
                .put("ok", false)
                .put("message", "refused: more questions than the sandbox's budget allows"));
        if (bd == Budget.Decision.DESTROY) {
          overBudget.run();
        }
        return;
      }
    }
    String nonce = bounded(h.path("nonce").asText(""), 128);
    String prompt = bounded(h.path("prompt").asText(""), 1024);
    Decision d = decide(nonce, prompt);
    ObjectNode reply = Json.object().put(Ops.OP, Ops.OP_ASKPASS_REPLY).put("aid", aid);
    if (d.value() != null) {
      reply.put("ok", true).put("value", d.value());
    } else {
      reply.put("ok", false).put("message", "refused: " + d.refusal());
    }
    Map<String, Object> data = new LinkedHashMap<>();
    data.put("host", bounded(d.host(), 255));
    data.put("asked", d.asked());
    data.put("decision", d.value() != null ? "allow" : "deny");
    if (d.refusal() != null) {
      data.put("reason", d.refusal());
    }
    if (d.value() != null || refusals.incrementAndGet() <= MAX_REFUSALS_AUDITED) {
      audit.accept(AuditEvent.GIT_CREDENTIAL, data);
    }
    send(reply);
  }

  private void send(ObjectNode reply) {
    AgentChannel c = channel;
    if (c == null) {
      return;
    }
    try {
      c.send(reply, new byte[0]);
    } catch (RuntimeException e) {
      // The sandbox is gone: its helper gets no answer and git fails.
    }
  }

  private static String bounded(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max);
  }
}
