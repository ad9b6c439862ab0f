package io.agentnest.internal.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;

class AutomatonTest {

  /** Every (end offset, pattern) the automaton reports, stepping over {@code text}. */
  private static Set<String> found(Automaton a, byte[] text) {
    Set<String> hits = new TreeSet<>();
    int st = 0;
    for (int i = 0; i < text.length; i++) {
      st = a.step(st, text[i] & 0xff);
      assertThat(a.depth(st)).isLessThanOrEqualTo(i + 1);
      int[] out = a.outputs(st);
      if (out != null) {
        for (int p : out) {
          hits.add(i + ":" + p);
        }
      }
    }
    return hits;
  }

  /** The same, by comparing every pattern at every offset. */
  private static Set<String> naive(List<byte[]> patterns, byte[] text) {
    Set<String> hits = new TreeSet<>();
    for (int p = 0; p < patterns.size(); p++) {
      byte[] pat = patterns.get(p);
      for (int end = pat.length - 1; end < text.length; end++) {
        if (pat.length == 0) {
          continue;
        }
        boolean all = true;
        for (int k = 0; k < pat.length && all; k++) {
          all = text[end - pat.length + 1 + k] == pat[k];
        }
        if (all) {
          hits.add(end + ":" + p);
        }
      }
    }
    return hits;
  }

  @Property(tries = 300)
  void findsExactlyTheOccurrencesANaiveSearchFinds(
      @ForAll("patterns") List<byte[]> patterns, @ForAll("texts") byte[] text) {
    Automaton a = new Automaton(patterns);
    assertThat(found(a, text)).isEqualTo(naive(patterns, text));
    for (int p = 0; p < patterns.size(); p++) {
      assertThat(a.patternLength(p)).isEqualTo(patterns.get(p).length);
    }
  }

  @Test
  void overlappingAndNestedPatternsAllMatchAcrossDenseAndSparseStates() {
    List<byte[]> patterns = new ArrayList<>();
    for (String s : List.of("he", "she", "his", "hers", "ushers!x", "sh", "rsxyzzy")) {
      patterns.add(s.getBytes(StandardCharsets.ISO_8859_1));
    }
    byte[] text = "ushers!x ahishers rsxyzzy".getBytes(StandardCharsets.ISO_8859_1);
    assertThat(found(new Automaton(patterns), text)).isEqualTo(naive(patterns, text));
  }

  @Provide
  Arbitrary<List<byte[]>> patterns() {
    // A small alphabet (plus any byte) so that patterns share prefixes and suffixes, and lengths
    // past the dense depth so that failure links run through sparse states too.
    Arbitrary<Byte> b =
        Arbitraries.oneOf(Arbitraries.of((byte) 'a', (byte) 'b', (byte) 'c'), Arbitraries.bytes());
    return b.array(byte[].class).ofMinSize(1).ofMaxSize(9).list().ofMinSize(1).ofMaxSize(12);
  }

  @Provide
  Arbitrary<byte[]> texts() {
    Arbitrary<Byte> b =
        Arbitraries.frequencyOf(
            Tuple.of(8, Arbitraries.of((byte) 'a', (byte) 'b', (byte) 'c')),
            Tuple.of(1, Arbitraries.bytes()));
    return b.array(byte[].class).ofMaxSize(200);
  }
}
