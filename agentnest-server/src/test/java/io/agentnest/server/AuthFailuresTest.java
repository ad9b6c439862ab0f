package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.server.http.ApiException;
import io.javalin.http.Context;
import java.lang.reflect.Proxy;
import org.junit.jupiter.api.Test;

/**
 * Issue 42, LOW 18: refused authentications were bounded per client address only, so guesses spread
 * over many addresses were not bounded at all. The clock stands still here, so no bucket refills
 * while the attack runs.
 */
class AuthFailuresTest {
  static Context from(String address) throws ReflectiveOperationException {
    // The servlet request type, found through Context so that this test needs no servlet import.
    Class<?> type = Context.class.getMethod("req").getReturnType();
    Object req =
        Proxy.newProxyInstance(
            AuthFailuresTest.class.getClassLoader(),
            new Class<?>[] {type},
            (p, m, args) -> {
              if (m.getName().equals("getRemoteAddr")) {
                return address;
              }
              throw new UnsupportedOperationException(m.getName());
            });
    return (Context)
        Proxy.newProxyInstance(
            AuthFailuresTest.class.getClassLoader(),
            new Class<?>[] {Context.class},
            (p, m, args) -> {
              if (m.getName().equals("req")) {
                return req;
              }
              throw new UnsupportedOperationException(m.getName());
            });
  }

  static String guess(int keyId) {
    return String.format("ank_%016x_", keyId) + "A".repeat(43);
  }

  /** Counts a refusal as the server does, ignoring the 429 it may answer. */
  static void refuse(AuthFailures f, Context ctx, String key) {
    try {
      f.check(ctx, key);
      f.refused(ctx, key);
    } catch (ApiException limited) {
      assertThat(limited.status()).isEqualTo(429);
    }
  }

  @Test
  void guessesSpreadOverManyAddressesMeetTheServerWideBound() throws Exception {
    AuthFailures f = new AuthFailures(() -> 0L);
    int key = 0;
    // Each address stays under its own bound (20), each key id under its own (5).
    for (int a = 0; a < AuthFailures.GLOBAL / 10; a++) {
      Context ctx = from("198.51.100." + a);
      for (int i = 0; i < 10; i++) {
        refuse(f, ctx, guess(key++));
      }
    }
    String next = guess(key);
    Context fresh = from("203.0.113.9");
    // A valid key from anywhere is still looked at: failing on purpose locks nobody out.
    f.check(fresh, next);
    assertThatThrownBy(() -> f.refused(fresh, next))
        .isInstanceOfSatisfying(
            ApiException.class,
            e -> {
              assertThat(e.status()).isEqualTo(429);
              assertThat(e.details()).containsEntry("quota", "failed_authentications_server");
            });
  }

  @Test
  void guessesAtOneKeyFromManyAddressesMeetThePerKeyBound() throws Exception {
    AuthFailures f = new AuthFailures(() -> 0L);
    for (int a = 0; a < AuthFailures.PER_KEY_ID; a++) {
      refuse(f, from("198.51.100." + a), guess(7));
    }
    Context fresh = from("203.0.113.9");
    f.check(fresh, guess(7));
    assertThatThrownBy(() -> f.refused(fresh, guess(7)))
        .isInstanceOfSatisfying(
            ApiException.class,
            e -> assertThat(e.details()).containsEntry("quota", "failed_authentications_per_key"));
    // Another key id from a fresh address is refused 401, not 429.
    f.refused(from("203.0.113.10"), guess(8));
  }
}
