package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import io.agentnest.AgentNestException;
import java.io.InputStream;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** Images in the engine: a cached presence check (every create asks) and the offline import. */
final class DockerImages {
  private final DockerClient client;
  private final EngineErrors errors;
  private final EngineHttp http;
  private final Set<String> known = ConcurrentHashMap.newKeySet();

  DockerImages(DockerClient client, EngineErrors errors, EngineHttp http) {
    this.client = client;
    this.errors = errors;
    this.http = http;
  }

  boolean exists(String image) {
    if (known.contains(image)) {
      return true;
    }
    try {
      client.inspectImageCmd(image).exec();
      known.add(image);
      return true;
    } catch (NotFoundException e) {
      return false;
    } catch (DockerException e) {
      throw new AgentNestException(
          "Docker could not inspect image " + image + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
  }

  /** Drops a cached presence, e.g. after the engine said the image vanished. */
  void forget(String image) {
    known.remove(image);
  }

  String importImage(InputStream tar, String repo, String tag, List<String> changes) {
    String status = http.importImage(tar, repo, tag, changes);
    forget(repo + ":" + tag);
    return status;
  }
}
