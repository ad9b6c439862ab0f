package io.agentnest.kubernetes;

import io.agentnest.kubernetes.internal.KubeSettings;
import java.util.Map;

/** Settings for tests, as if from the environment. */
final class KubeSettingsAccess {
  private KubeSettingsAccess() {}

  static KubeSettings of(Map<String, String> values) {
    return KubeSettings.fromMap(values);
  }
}
