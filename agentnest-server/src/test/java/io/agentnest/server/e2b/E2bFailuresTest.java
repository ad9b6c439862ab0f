package io.agentnest.server.e2b;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.BackendUnavailableException;
import io.agentnest.PoolExhaustedException;
import io.agentnest.server.service.Failures;
import java.util.List;
import org.junit.jupiter.api.Test;

class E2bFailuresTest {
  @Test
  void anUnavailableEngineOrAnEmptyPoolIsUnavailableOnTheE2bFace() {
    for (RuntimeException e :
        List.of(new PoolExhaustedException("engine"), new BackendUnavailableException("engine"))) {
      assertThat(E2bConnect.fromApi(Failures.of(e)).code).isEqualTo(E2bConnect.Code.UNAVAILABLE);
    }
  }
}
