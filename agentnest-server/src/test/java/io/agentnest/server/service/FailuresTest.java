package io.agentnest.server.service;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.agentnest.AgentNestException;
import io.agentnest.ApprovalDeniedException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.ConfigException;
import io.agentnest.ExposeException;
import io.agentnest.FailureReason;
import io.agentnest.FileOperationException;
import io.agentnest.GitException;
import io.agentnest.ImageNotFoundException;
import io.agentnest.PoolExhaustedException;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.SnapshotException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.server.http.ApiException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class FailuresTest {
  private static final String ENGINE_WORDS =
      "docker: /var/lib/docker/overlay2/3f2a9c1e77b04d5a8e1b/merged: no such file";

  /** Every typed reason of core's API, found in its byte code, so a new enum cannot be missed. */
  private static List<FailureReason> everyReason() {
    List<FailureReason> all = new ArrayList<>();
    for (JavaClass c :
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.agentnest")) {
      if (c.isEnum()
          && c.isAssignableTo(FailureReason.class)
          && c.getPackageName().equals("io.agentnest")) {
        for (Object constant : c.reflect().getEnumConstants()) {
          all.add((FailureReason) constant);
        }
      }
    }
    return all;
  }

  @Test
  void everyTypedReasonAnswersWithAStatusOfItsActorsClass() {
    List<FailureReason> reasons = everyReason();
    assertThat(reasons)
        .as("the reasons of files, snapshots, git and expose at least")
        .contains(
            FileOperationException.Reason.BAD_PATH,
            SnapshotException.Reason.TAMPERED,
            GitException.Reason.AUTH_FAILED,
            ExposeException.Reason.BAD_PORT);
    for (FailureReason r : reasons) {
      int status = Failures.status(r);
      String what = r.getClass().getName() + "." + r.code() + " (" + r.actor() + ")";
      switch (r.actor()) {
        case CALLER, SANDBOX -> assertThat(status).as(what).isBetween(400, 499);
        case OPERATOR -> assertThat(status).as(what).isBetween(500, 599);
      }
      // No typed reason is the catch-all "the sandbox failed" answer.
      assertThat(status).as(what).isNotEqualTo(502);
    }
  }

  private enum Unlisted implements FailureReason {
    WRONG_ARGUMENT(Actor.CALLER),
    BROKEN_HOST(Actor.OPERATOR),
    BAD_CONTENT(Actor.SANDBOX);

    private final Actor actor;

    Unlisted(Actor actor) {
      this.actor = actor;
    }

    @Override
    public Actor actor() {
      return actor;
    }
  }

  @Test
  void aReasonTheTableDoesNotNameYetIsAnsweredByWhoMustAct() {
    assertThat(Failures.status(Unlisted.WRONG_ARGUMENT)).isEqualTo(400);
    assertThat(Failures.status(Unlisted.BAD_CONTENT)).isEqualTo(422);
    assertThat(Failures.status(Unlisted.BROKEN_HOST)).isEqualTo(500);
  }

  @Test
  void aReasonAnswersTheSameWhicheverFaceMapsIt() {
    for (FileOperationException.Reason r : FileOperationException.Reason.values()) {
      ApiException a = Failures.of(new FileOperationException(r, "x"));
      assertThat(a.status()).as(r.code()).isEqualTo(Failures.status(r));
      assertThat(a.details()).containsEntry("reason", r.code());
    }
    for (SnapshotException.Reason r : SnapshotException.Reason.values()) {
      ApiException a = Failures.of(new SnapshotException(r, ENGINE_WORDS));
      assertThat(a.status()).as(r.code()).isEqualTo(Failures.status(r));
      // The store's words name host paths: the client gets the reason only.
      assertThat(a.getMessage()).doesNotContain("/var/lib/docker").contains(r.code());
    }
    for (GitException.Reason r : GitException.Reason.values()) {
      assertThat(Failures.of(new GitException(r, "x")).status()).isEqualTo(Failures.status(r));
    }
    for (ExposeException.Reason r : ExposeException.Reason.values()) {
      assertThat(Failures.of(new ExposeException(r, "x")).status()).isEqualTo(Failures.status(r));
    }
  }

  /** One of each of core's exception types, and the status it must answer with. */
  private static final Map<Class<?>, Function<String, RuntimeException>> MADE =
      Map.ofEntries(
          Map.entry(SandboxNotFoundException.class, SandboxNotFoundException::new),
          Map.entry(ConfigException.class, ConfigException::new),
          Map.entry(UnsupportedControlException.class, UnsupportedControlException::new),
          Map.entry(BackendUnavailableException.class, BackendUnavailableException::new),
          Map.entry(PoolExhaustedException.class, PoolExhaustedException::new),
          Map.entry(ImageNotFoundException.class, ImageNotFoundException::new),
          Map.entry(SandboxClosedException.class, SandboxClosedException::new),
          Map.entry(AgentNestException.class, AgentNestException::new),
          Map.entry(
              ApprovalDeniedException.class, m -> new ApprovalDeniedException("shell", m, "no")),
          Map.entry(
              FileOperationException.class,
              m -> new FileOperationException(FileOperationException.Reason.IO, m)),
          Map.entry(
              SnapshotException.class, m -> new SnapshotException(SnapshotException.Reason.IO, m)),
          Map.entry(GitException.class, m -> new GitException(GitException.Reason.FAILED, m)),
          Map.entry(
              ExposeException.class, m -> new ExposeException(ExposeException.Reason.BAD_PORT, m)));

  private static final Map<Class<?>, Integer> STATUS =
      Map.ofEntries(
          Map.entry(SandboxNotFoundException.class, 404),
          Map.entry(ConfigException.class, 422),
          Map.entry(UnsupportedControlException.class, 422),
          Map.entry(BackendUnavailableException.class, 503),
          Map.entry(PoolExhaustedException.class, 503),
          Map.entry(ImageNotFoundException.class, 422),
          Map.entry(SandboxClosedException.class, 502),
          Map.entry(AgentNestException.class, 502),
          Map.entry(ApprovalDeniedException.class, 403),
          Map.entry(FileOperationException.class, 422),
          Map.entry(SnapshotException.class, 500),
          Map.entry(GitException.class, 422),
          Map.entry(ExposeException.class, 400));

  @Test
  void everyExceptionTypeOfCoresApiHasADeliberateAnswer() {
    Set<String> types = new TreeSet<>();
    for (JavaClass c :
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.agentnest")) {
      if (c.getPackageName().equals("io.agentnest")
          && c.isAssignableTo(AgentNestException.class)
          && !c.getModifiers().contains(JavaModifier.ABSTRACT)) {
        types.add(c.getName());
      }
    }
    Set<String> known = new TreeSet<>();
    MADE.keySet().forEach(k -> known.add(k.getName()));
    assertThat(types)
        .as(
            "a new exception type of core's API needs its HTTP answer decided in Failures and"
                + " listed here")
        .isEqualTo(known);
    for (Map.Entry<Class<?>, Function<String, RuntimeException>> e : MADE.entrySet()) {
      ApiException a = Failures.of(e.getValue().apply(ENGINE_WORDS));
      assertThat(a.status()).as(e.getKey().getSimpleName()).isEqualTo(STATUS.get(e.getKey()));
      if (a.status() >= 500 || e.getKey() == ImageNotFoundException.class) {
        // The engine's words stay in the server log; the client gets a reference into it.
        assertThat(a.getMessage()).as(e.getKey().getSimpleName()).doesNotContain("/var/lib");
        if (a.status() != 500) {
          assertThat(a.details()).containsKey("reference");
          assertThat(a.getMessage()).contains(String.valueOf(a.details().get("reference")));
        }
      }
    }
  }

  @Test
  void anUnavailableEngineOrAnEmptyPoolIsARetryNotAFailedSandbox() {
    for (RuntimeException e :
        List.of(
            new PoolExhaustedException(ENGINE_WORDS),
            new BackendUnavailableException(ENGINE_WORDS))) {
      ApiException a = Failures.of(e);
      // 503 carries Retry-After (Exchange.send); the E2B face answers UNAVAILABLE
      // (E2bFailuresTest).
      assertThat(a.status()).isEqualTo(503);
      assertThat(a.fix()).contains("retry in a moment");
    }
  }
}
