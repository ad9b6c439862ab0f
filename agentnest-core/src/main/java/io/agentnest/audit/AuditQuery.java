package io.agentnest.audit;

import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A filter over the audit trail; every criterion that is set must hold. Build with {@link
 * #builder()}; {@link #all()} matches everything (newest first, at most {@value #DEFAULT_LIMIT}).
 */
public final class AuditQuery {
  public static final int DEFAULT_LIMIT = 100;

  /** Result order, by {@code time} then {@code seq}. */
  /** The most exact sandbox ids one query takes ({@link Builder#sandboxIds}). */
  public static final int MAX_SANDBOX_IDS = 10_000;

  public enum Order {
    NEWEST_FIRST,
    OLDEST_FIRST
  }

  private final @Nullable String sandbox;
  private final @Nullable Set<String> sandboxIds;
  private final Set<String> types;
  private final @Nullable String decision;
  private final @Nullable Instant since;
  private final @Nullable Instant until;
  private final @Nullable String text;
  private final int limit;
  private final Order order;

  private AuditQuery(Builder b) {
    this.sandbox = b.sandbox;
    this.sandboxIds = b.sandboxIds == null ? null : Set.copyOf(b.sandboxIds);
    this.types = Set.copyOf(b.types);
    this.decision = b.decision;
    this.since = b.since;
    this.until = b.until;
    this.text = b.text;
    this.limit = b.limit;
    this.order = b.order;
  }

  public static AuditQuery all() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this query's criteria. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.sandbox = sandbox;
    b.sandboxIds = sandboxIds;
    b.types.addAll(types);
    b.decision = decision;
    b.since = since;
    b.until = until;
    b.text = text;
    b.limit = limit;
    b.order = order;
    return b;
  }

  /** Sandbox id or id prefix; null: any. */
  public @Nullable String sandbox() {
    return sandbox;
  }

  /**
   * Exact sandbox ids of which a record must name one (e.g. a tenant's sandboxes, destroyed ones
   * too); null: any. Combines with {@link #sandbox()}.
   */
  public @Nullable Set<String> sandboxIds() {
    return sandboxIds;
  }

  /** Event types; empty: any. */
  public Set<String> types() {
    return types;
  }

  /** Value of {@code data.decision} (e.g. allow, deny); null: any. */
  public @Nullable String decision() {
    return decision;
  }

  /** Inclusive lower bound on {@code time}. */
  public @Nullable Instant since() {
    return since;
  }

  /** Exclusive upper bound on {@code time}. */
  public @Nullable Instant until() {
    return until;
  }

  /** Case-insensitive substring of the record's type and data JSON ({@code "type data"}). */
  public @Nullable String text() {
    return text;
  }

  public int limit() {
    return limit;
  }

  public Order order() {
    return order;
  }

  /** Whether a record matches every criterion but the limit (used by tail). */
  public boolean matches(AuditEvent e) {
    return matches(e, null);
  }

  boolean matches(AuditEvent e, @Nullable String line) {
    if (sandbox != null && (e.sandboxId() == null || !e.sandboxId().startsWith(sandbox))) {
      return false;
    }
    if (sandboxIds != null && (e.sandboxId() == null || !sandboxIds.contains(e.sandboxId()))) {
      return false;
    }
    if (!types.isEmpty() && !types.contains(e.type())) {
      return false;
    }
    if (decision != null && !decision.equals(e.decision())) {
      return false;
    }
    if (since != null && e.time().isBefore(since)) {
      return false;
    }
    if (until != null && !e.time().isBefore(until)) {
      return false;
    }
    if (text != null) {
      String data = line != null ? AuditJson.dataJson(line) : AuditJson.normalize(e.data()).json();
      return AuditIndex.searchKey(e.type(), data).contains(text.toLowerCase(Locale.ROOT));
    }
    return true;
  }

  @Override
  public String toString() {
    return "AuditQuery[sandbox="
        + sandbox
        + ", sandboxIds="
        + (sandboxIds == null ? "any" : sandboxIds.size())
        + ", types="
        + types
        + ", decision="
        + decision
        + ", since="
        + since
        + ", until="
        + until
        + ", text="
        + text
        + ", limit="
        + limit
        + ", order="
        + order
        + "]";
  }

  /** Builds an {@link AuditQuery}. */
  public static final class Builder {
    private @Nullable String sandbox;
    private @Nullable Set<String> sandboxIds;
    private final Set<String> types = new LinkedHashSet<>();
    private @Nullable String decision;
    private @Nullable Instant since;
    private @Nullable Instant until;
    private @Nullable String text;
    private int limit = DEFAULT_LIMIT;
    private Order order = Order.NEWEST_FIRST;

    private Builder() {}

    /** Sandbox id or a prefix of it; null or empty: any. */
    public Builder sandbox(@Nullable String idOrPrefix) {
      this.sandbox = idOrPrefix == null || idOrPrefix.isEmpty() ? null : idOrPrefix;
      return this;
    }

    /**
     * Only records of these exact sandbox ids (at most {@link #MAX_SANDBOX_IDS}); null: any. An
     * empty set matches nothing.
     */
    public Builder sandboxIds(@Nullable Collection<String> ids) {
      if (ids != null && ids.size() > MAX_SANDBOX_IDS) {
        throw new IllegalArgumentException(
            ids.size()
                + " sandbox ids are more than a query takes ("
                + MAX_SANDBOX_IDS
                + "): narrow it with a time range or query fewer sandboxes");
      }
      this.sandboxIds = ids == null ? null : new LinkedHashSet<>(ids);
      return this;
    }

    /** Adds event types (any of them matches). */
    public Builder type(String... types) {
      return types(List.of(types));
    }

    /** Adds event types (any of them matches). */
    public Builder types(Collection<String> types) {
      for (String t : types) {
        this.types.add(Objects.requireNonNull(t, "type"));
      }
      return this;
    }

    public Builder decision(@Nullable String decision) {
      this.decision =
          decision == null || decision.isBlank() ? null : AuditEvent.normalDecision(decision);
      return this;
    }

    public Builder since(@Nullable Instant since) {
      this.since = since;
      return this;
    }

    public Builder until(@Nullable Instant until) {
      this.until = until;
      return this;
    }

    /**
     * Case-insensitive substring of the record's type and data JSON, e.g. {@code pypi.org} or
     * {@code "exit":1}; null or empty: any.
     */
    public Builder text(@Nullable String text) {
      this.text = text == null || text.isEmpty() ? null : text;
      return this;
    }

    /** At most this many results (1 to 1,000,000; default {@value #DEFAULT_LIMIT}). */
    public Builder limit(int limit) {
      if (limit < 1 || limit > 1_000_000) {
        throw new IllegalArgumentException("limit must be 1..1000000, got " + limit);
      }
      this.limit = limit;
      return this;
    }

    public Builder order(Order order) {
      this.order = Objects.requireNonNull(order, "order");
      return this;
    }

    public Builder newestFirst() {
      return order(Order.NEWEST_FIRST);
    }

    public Builder oldestFirst() {
      return order(Order.OLDEST_FIRST);
    }

    public AuditQuery build() {
      return new AuditQuery(this);
    }
  }
}
