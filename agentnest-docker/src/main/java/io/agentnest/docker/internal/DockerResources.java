package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.ListVolumesResponse;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Network;
import io.agentnest.AgentNestException;
import io.agentnest.spi.Labels;
import io.agentnest.spi.ManagedResource;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** What prune sees and removes: managed containers, networks, volumes and orphaned bulk dirs. */
final class DockerResources {
  private final DockerClient client;
  private final EngineErrors errors;
  private final DockerContainers containers;

  DockerResources(DockerClient client, EngineErrors errors, DockerContainers containers) {
    this.client = client;
    this.errors = errors;
    this.containers = containers;
  }

  /** Every container, network and volume labelled as managed by AgentNest. */
  List<ManagedResource> list() {
    Map<String, String> filter = Map.of(Labels.MANAGED, "true");
    List<ManagedResource> out = new ArrayList<>();
    try {
      for (Container c :
          client
              .listContainersCmd()
              .withShowAll(true)
              .withShowSize(true)
              .withLabelFilter(filter)
              .exec()) {
        out.add(
            new ManagedResource(
                "container",
                c.getId(),
                c.getNames() != null && c.getNames().length > 0 ? c.getNames()[0] : c.getId(),
                c.getState() == null ? "unknown" : c.getState(),
                Instant.ofEpochSecond(c.getCreated() == null ? 0 : c.getCreated()),
                c.getSizeRw() == null ? -1 : c.getSizeRw(),
                c.getLabels() == null ? Map.of() : c.getLabels()));
      }
      out.addAll(BulkDirs.orphaned(out));
      for (Network n :
          client.listNetworksCmd().withFilter("label", List.of(Labels.MANAGED + "=true")).exec()) {
        out.add(
            new ManagedResource(
                "network",
                n.getId(),
                n.getName(),
                "",
                n.getCreated() == null ? Instant.EPOCH : n.getCreated().toInstant(),
                -1,
                n.getLabels() == null ? Map.of() : n.getLabels()));
      }
      ListVolumesResponse volumes =
          client.listVolumesCmd().withFilter("label", List.of(Labels.MANAGED + "=true")).exec();
      if (volumes.getVolumes() != null) {
        for (var v : volumes.getVolumes()) {
          Map<String, String> labels = v.getLabels() == null ? Map.of() : v.getLabels();
          out.add(
              new ManagedResource(
                  "volume", v.getName(), v.getName(), "", Instant.EPOCH, -1, labels));
        }
      }
    } catch (DockerException e) {
      throw new AgentNestException("Docker could not list managed resources: " + e.getMessage());
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
    return out;
  }

  void remove(ManagedResource r) {
    try {
      switch (r.kind()) {
        case BulkDirs.KIND -> BulkDirs.delete(Path.of(r.id()));
        case "container" -> containers.remove(r.id());
        case "network" -> client.removeNetworkCmd(r.id()).exec();
        case "volume" -> client.removeVolumeCmd(r.id()).exec();
        default -> throw new AgentNestException("unknown resource kind " + r.kind());
      }
    } catch (NotFoundException e) {
      // already gone
    } catch (DockerException e) {
      throw new AgentNestException(
          "Docker could not remove " + r.kind() + " " + r.id() + ": " + e.getMessage());
    } catch (AgentNestException e) {
      throw e;
    } catch (RuntimeException e) {
      throw errors.unavailable(e);
    }
  }
}
