package io.agentnest.internal.audit.shipping;

import java.time.Instant;

/**
 * Records a collector did not get: {@code dropped} of them, seqs within {@code firstSeq..lastSeq}
 * (not necessarily every seq in the range). Sent as one synthetic {@code shipping.gap} record.
 */
record Gap(long dropped, long firstSeq, long lastSeq, Instant time) {
  static final String TYPE = "shipping.gap";

  /** The gap as a JSON object, the body of the synthetic record. */
  String toJson() {
    return "{\"type\":\""
        + TYPE
        + "\",\"time\":\""
        + time
        + "\",\"dropped\":"
        + dropped
        + ",\"first_seq\":"
        + firstSeq
        + ",\"last_seq\":"
        + lastSeq
        + ",\"note\":\"the local audit log holds every record: read them back by seq\"}";
  }
}
