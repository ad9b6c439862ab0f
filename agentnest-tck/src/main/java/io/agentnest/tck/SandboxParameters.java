package io.agentnest.tck;

import io.agentnest.Sandbox;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Supplies {@code Sandbox} parameters of contract tests: a fresh one per test, or with {@link
 * Shared} one per test class. The store closes (destroys) them when the test or class ends.
 */
public final class SandboxParameters implements ParameterResolver {
  private static final Namespace NS = Namespace.create(SandboxParameters.class);

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return parameter.getParameter().getType() == Sandbox.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    BackendUnderTest target = ((BackendTarget) context.getRequiredTestInstance()).target();
    if (parameter.isAnnotated(Shared.class)) {
      ExtensionContext owner = context.getParent().orElse(context);
      return owner
          .getStore(NS)
          .getOrComputeIfAbsent(
              "shared",
              k -> Sandbox.create(target.configure().label("agentnest-tck-use", "shared").build()),
              Sandbox.class);
    }
    Sandbox fresh = Sandbox.create(target.configure().build());
    context.getStore(NS).put("fresh-" + parameter.getIndex(), fresh);
    return fresh;
  }
}
