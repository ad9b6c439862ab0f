package io.agentnest.internal.egress;

import java.util.Locale;

/** One header field: its name as sent, lowercased for lookups, and its trimmed value. */
final class HeaderField {
  final String name;
  final String lowerName;
  final String value;

  HeaderField(String name, String value) {
    this.name = name;
    this.lowerName = name.toLowerCase(Locale.ROOT);
    this.value = value;
  }
}
