package io.agentnest.tck;

import org.junit.jupiter.api.extension.ExtendWith;

/** Implemented by a backend's contract test class: names the backend under test. */
@ExtendWith(SandboxParameters.class)
public interface BackendTarget {
  BackendUnderTest target();
}
